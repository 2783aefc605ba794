"""Suite fio-matrix expands to study S1's 50 cases per filesystem, with the study's parameters."""

import shutil
import subprocess
from collections import Counter

import pytest

from harness.suites import fio_matrix, get


@pytest.mark.parametrize("profile", ["paper", "quick", "smoke"])
def test_fifty_cases_same_shape_in_every_profile(profile):
    cases = get("fio-matrix").cases(profile)
    assert len(cases) == 50 and len({c.id for c in cases}) == 50
    combos = Counter((c.params["rw"], c.params["ioengine"], c.params["direct"], c.params["layout"],
                      c.params["numjobs"]) for c in cases)
    assert all(n == 1 for n in combos.values())
    singles = [c for c in cases if c.params["numjobs"] == 1]
    assert len(singles) == 48
    assert {c.params["rw"] for c in singles} == {"read", "write", "rw", "randread", "randwrite", "randrw"}
    assert {c.params["ioengine"] for c in singles} == {"sync", "libaio"}
    assert {c.params["direct"] for c in singles} == {0, 1}
    assert {c.params["layout"] for c in singles} == {"many-small", "few-large"}
    four = [c.params for c in cases if c.params["numjobs"] == 4]
    assert sorted((p["rw"], p["ioengine"], p["direct"], p["layout"]) for p in four) == [
        ("randrw", "libaio", 1, "few-large"), ("randrw", "sync", 1, "few-large")]
    assert all(c.params["bs"] == 4096 and "blocksize=4096" in c.job for c in cases)
    assert [c.id for c in cases] == [c.id for c in get("fio-matrix").cases("paper")]


def test_paper_profile_is_the_article():
    cases = {c.id: c for c in get("fio-matrix").cases("paper")}
    c = cases["read-sync-buffered-many-small"]
    for line in ("rw=read", "blocksize=4096", "ioengine=sync", "nrfiles=200", "size=256m", "runtime=60",
                 "direct=0", "directory=${FSLAB_MNT}"):
        assert line in c.job.splitlines(), line
    assert "time_based" not in c.job  # the article's jobs end at size or runtime
    assert "nrfiles=2" in cases["randwrite-libaio-direct-few-large"].job
    four = cases["randrw-libaio-direct-few-large-4jobs"].job.splitlines()
    assert "numjobs=4" in four and "group_reporting" in four


def test_case_id():
    assert fio_matrix.case_id("rw", "sync", 0, "many-small") == "rw-sync-buffered-many-small"
    assert fio_matrix.case_id("randrw", "libaio", 1, "few-large", 4) == "randrw-libaio-direct-few-large-4jobs"


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed on the host")
def test_fio_parses_every_job(tmp_path):
    for c in get("fio-matrix").cases("paper"):
        path = tmp_path / f"{c.id}.fio"
        path.write_text(c.job)
        cp = subprocess.run(["fio", "--parse-only", str(path)], env={"FSLAB_MNT": str(tmp_path)},
                            capture_output=True, text=True)
        assert cp.returncode == 0, (c.id, cp.stderr)
