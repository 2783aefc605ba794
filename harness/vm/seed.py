"""The NoCloud seed: a small ISO labelled `cidata` that carries the plan into the guest.

cloud-init writes the plan to /run/fslab/plan.json (write_files) and starts the agent (runcmd).
The guest has no NIC at all (`-nic none`): nothing in it can reach the network.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import yaml

from harness.plan.document import PLAN_PATH, Plan
from harness.proc import run, which


def user_data(plan: Plan) -> str:
    """The #cloud-config that delivers the plan and runs the agent; the plan travels base64."""
    doc = {
        "write_files": [{
            "path": PLAN_PATH,
            "permissions": "0600",
            "encoding": "b64",
            "content": base64.b64encode(json.dumps(plan.to_json(), sort_keys=True).encode()).decode(),
        }],
        "runcmd": [["/usr/local/bin/fslab-guest", "run", PLAN_PATH]],
        "ssh_deletekeys": False,
    }
    return "#cloud-config\n" + yaml.safe_dump(doc, sort_keys=False, width=1_000_000)


def meta_data(plan: Plan) -> str:
    return yaml.safe_dump({"instance-id": plan.run_id, "local-hostname": "fslab-guest"}, sort_keys=False)


def write_seed(plan: Plan, seed_dir: Path, iso: Path) -> list[str]:
    """Write user-data and meta-data and pack them into `iso`; return the argv."""
    seed_dir.mkdir(parents=True, exist_ok=True)
    (seed_dir / "user-data").write_text(user_data(plan))
    (seed_dir / "meta-data").write_text(meta_data(plan))
    tool = which("genisoimage", "genisoimage")
    argv = [tool, "-quiet", "-output", str(iso), "-volid", "cidata", "-joliet", "-rock",
            str(seed_dir / "user-data"), str(seed_dir / "meta-data")]
    run(argv)
    return argv
