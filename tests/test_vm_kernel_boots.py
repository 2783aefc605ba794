"""VM test (issue 26): `kernels:` with --boots 2, the kernels' boots alternating. fio-basic smoke
on ext4 only, on the image's kernel and bookworm-backports' 6.12 -cloud package (tests/vmconfigs/
kernels.yaml, its xfs left out): four boots in the order the plan's seed drew (A B B A or B A A B),
each guest running the kernel its run names, each kernel's two boots gathered into its one run
directory, and `fslab compare` of the two runs testing boot means (n = 2 a side) and saying the
boots alternated. tests/test_alternate.py and tests/test_salvage.py hold the same without a VM."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from vmhelpers import ROOT, fslab, no_qemu_left, read_records, slow

pytestmark = pytest.mark.vm

BPO = "bpo-6.12-cloud"


@slow("four kernel boots (~4 min under TCG)")

def test_two_kernels_in_alternating_boots(image, tmp_path):
    text = (ROOT / "tests" / "vmconfigs" / "kernels.yaml").read_text()
    config = tmp_path / "kernels-ext4.yaml"
    config.write_text("".join(ln for ln in text.splitlines(keepends=True) if "d1" not in ln))  # xfs and its disk
    cp = fslab("run", str(config), "--boots", "2", "--results-dir", str(tmp_path / "runs"), timeout=1800)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    dirs = [Path(x) for x in cp.stdout.strip().splitlines()[-2:]]
    mans = [json.loads((d / "manifest.json").read_text()) for d in dirs]
    assert [m["kernel"]["name"] for m in mans] == ["image", BPO]
    alt = mans[0]["alternation"]
    assert alt == mans[1]["alternation"] and alt["order"] == "random"
    ran = [(b["kernel"], b["boot"]) for b in alt["boots"]]
    assert ran in ([("image", 1), (BPO, 1), (BPO, 2), ("image", 2)], [(BPO, 1), ("image", 1), ("image", 2), (BPO, 2)])
    starts = [b["started"] for b in alt["boots"]]
    assert starts == sorted(starts) and len(set(starts)) == 4
    for d, m in zip(dirs, mans, strict=True):
        assert no_qemu_left(m["run_id"]) and m["status"] == "ok" and m["plan"]["repeat"]["boots"] == 2
        for k in (1, 2):  # each boot's guest ran this run's kernel, and started when the order says
            boot = json.loads((d / "boots" / f"b{k}" / "manifest.json").read_text())
            assert boot["guest"]["kernel"] == m["kernel"]["version"]
            assert boot["started"] >= next(b["started"] for b in alt["boots"]
                                           if (b["kernel"], b["boot"]) == (m["kernel"]["name"], k))
        recs = read_records(d)
        assert {r["boot"] for r in recs} == {1, 2} and all(r["ok"] for r in recs)

    cp = fslab("compare", str(dirs[0]), str(dirs[1]))
    assert cp.returncode == 0, cp.stderr[-2000:]
    print(cp.stdout)  # the figures, for the record of a run made by hand (-s)
    order = " ".join("A" if k == "image" else "B" for k, _ in ran)
    assert (f"n counts boots (2 boots a kernel, each boot's mean of its repetitions); the kernels' boots alternated: "
            f"{order} (A = image, B = {BPO})") in cp.stdout
    (row,) = [ln for ln in cp.stdout.splitlines() if re.match(r"randrw-4k\s+ext4\s+iops ", ln)]
    assert re.search(r"\s2\s+\S+\s+2\s", row), row  # nA and nB: the boots
