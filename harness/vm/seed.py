"""The NoCloud seed: a small ISO labelled `cidata` that carries the plan into the guest.

cloud-init writes the plan to /run/fslab/plan.json (write_files) and starts the agent (runcmd).
The guest has no NIC at all (`-nic none`): nothing in it can reach the network.

A suite file's inputs (plan `inputs`) travel on the same ISO, under `inputs/` (Rock Ridge keeps
their modes); runcmd first mounts the seed read-only at INPUTS_MOUNT, so the steps find them at
INPUTS_DIR/<name>. Each input is hashed again here and refused if it changed since the plan.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import yaml

from harness.config.suite_file import hash_input
from harness.errors import FslabError
from harness.plan.document import INPUTS_MOUNT, PLAN_PATH, Plan
from harness.proc import run, which

SEED_LABEL = "cidata"


def user_data(plan: Plan) -> str:
    """The #cloud-config that delivers the plan and runs the agent; the plan travels base64."""
    doc = {
        "write_files": [{
            "path": PLAN_PATH,
            "permissions": "0600",
            "encoding": "b64",
            "content": base64.b64encode(json.dumps(plan.to_json(), sort_keys=True).encode()).decode(),
        }],
        "runcmd": [*_mount_inputs(plan), ["/usr/local/bin/fslab-guest", "run", PLAN_PATH]],
        "ssh_deletekeys": False,
    }
    return "#cloud-config\n" + yaml.safe_dump(doc, sort_keys=False, width=1_000_000)


def _mount_inputs(plan: Plan) -> list[list[str]]:
    """The commands that mount the seed (read-only) where the steps find the inputs; none without."""
    if not plan.inputs:
        return []
    return [["mkdir", "-p", INPUTS_MOUNT],
            ["mount", "-t", "iso9660", "-o", "ro", f"LABEL={SEED_LABEL}", INPUTS_MOUNT]]


def graft_points(plan: Plan) -> list[str]:
    """genisoimage's `inputs/<name>=<host path>` of every input, each checked against its sha256."""
    out = []
    for i in plan.inputs:
        try:
            digest = hash_input(Path(i.source))[0]
        except (OSError, ValueError) as e:
            raise FslabError(f"input {i.name}: {i.source}: cannot read it: {e}") from None
        if digest != i.sha256:
            raise FslabError(f"input {i.name}: {i.source} changed since the plan was made (sha256 {digest}, "
                             f"the plan says {i.sha256})", hint="run again to make a new plan")
        out.append(f"inputs/{i.name}{'/' if i.kind == 'dir' else ''}={i.source}")
    return out


def meta_data(plan: Plan) -> str:
    return yaml.safe_dump({"instance-id": plan.run_id, "local-hostname": "fslab-guest"}, sort_keys=False)


def write_seed(plan: Plan, seed_dir: Path, iso: Path) -> list[str]:
    """Write user-data and meta-data and pack them into `iso`; return the argv."""
    seed_dir.mkdir(parents=True, exist_ok=True)
    (seed_dir / "user-data").write_text(user_data(plan))
    (seed_dir / "meta-data").write_text(meta_data(plan))
    tool = which("genisoimage", "genisoimage")
    argv = [tool, "-quiet", "-output", str(iso), "-volid", SEED_LABEL, "-joliet", "-rock"]
    grafts = graft_points(plan)
    if grafts:  # user-data and meta-data stay at the top, the inputs under inputs/
        argv += ["-joliet-long", "-graft-points", f"user-data={seed_dir / 'user-data'}",
                 f"meta-data={seed_dir / 'meta-data'}", *grafts]
    else:
        argv += [str(seed_dir / "user-data"), str(seed_dir / "meta-data")]
    run(argv)
    return argv
