"""harness/config/suite_file.py: a suite written in YAML becomes a plan; every bad file is one line
naming the file, the line and the key (issue 27). Also the host-side metric extraction, the
direction the records carry into the ranking, the seed's inputs, and the contract doc's table."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import suites
from harness.analysis import ranking, stats
from harness.analysis.claims import evaluate, file_claims
from harness.analysis.runs import Run
from harness.config import resolve, suite_file, suite_file_keys, vmconfig
from harness.errors import FslabError
from harness.plan.document import INPUTS_DIR, Plan
from harness.results.steps import steps_records
from harness.vm import seed

ROOT = Path(__file__).resolve().parent.parent
GOOD = """\
name: tar-rm
description: tar x, rm -rf
inputs: [tree.tar]
variables: {tarball: tree.tar}
setup:
  - {name: workdir, command: [mkdir, -p, work]}
steps:
  - name: untar
    cwd: work
    cold: true
    command: [tar, -xf, "{{inputs}}/{{tarball}}"]
    metrics:
      - {name: files, regex: 'files: (?P<value>[0-9]+)', unit: files, better: higher}
  - name: rm
    cwd: work
    cold: true
    command: rm -rf tree
    shell: true
headline: files
profiles:
  smoke: {reps: 1, variables: {tarball: small.tar}}
  quick: {reps: 3, timeout: 20m}
"""


def _write(tmp: Path, text: str, tarball: bytes = b"x" * 1000) -> Path:
    (tmp / "tree.tar").write_bytes(tarball)
    p = tmp / "suite.yaml"
    p.write_text(text)
    return p


def _load(tmp: Path, text: str) -> suite_file.SuiteFile:
    return suite_file.load(_write(tmp, text), tuple(suites.registry()))


def test_good_file_becomes_one_steps_case(tmp_path):
    sf = _load(tmp_path, GOOD)
    assert sf.suite.name == "tar-rm" and sf.suite.headline == "files"
    assert list(sf.suite.profiles) == ["smoke", "quick"] and sf.suite.default_reps("quick") == 3
    (case,) = sf.suite.cases("smoke")
    assert case.id == "tar-rm" and case.kind == "steps" and case.timeout_s == suite_file.DEFAULT_TIMEOUT
    names = [s.name for s in case.steps]
    assert names == ["workdir", "cold-untar", "untar", "cold-rm", "rm"]
    by = {s.name: s for s in case.steps}
    assert by["workdir"].timed is False and by["workdir"].cwd is None
    assert by["cold-untar"].builtin == "cold-start"
    assert by["untar"].argv == ("tar", "-xf", f"{INPUTS_DIR}/small.tar")  # the profile's variable
    assert by["untar"].cwd == "{mnt}/work" and by["untar"].timed is True
    assert by["untar"].extract == ({"metric": "files", "unit": "files", "better": "higher",
                                    "regex": "files: (?P<value>[0-9]+)"},)
    assert by["rm"].argv == ("sh", "-c", "rm -rf tree")
    assert sf.suite.cases("quick")[0].timeout_s == 1200
    (inp,) = sf.inputs
    assert inp.name == "tree.tar" and inp.bytes == 1000 and inp.sha256 == hashlib.sha256(b"x" * 1000).hexdigest()
    assert case.params["suite_file_sha256"] == sf.sha256 == hashlib.sha256(GOOD.encode()).hexdigest()


def test_a_silent_step_is_stopped_and_described_by_the_agent(tmp_path):
    """`silent: 10m`: the plan step's silent_s (the agent stops it when quiet that long, and says
    what its processes do at a quarter of it); without the key, 0 (never)."""
    sf = _load(tmp_path, GOOD.replace("    shell: true\n", "    shell: true\n    silent: 10m\n"))
    (case,) = sf.suite.cases("smoke")
    by = {s.name: s for s in case.steps}
    assert by["rm"].silent_s == 600 and by["untar"].silent_s == 0


def test_resolve_puts_inputs_suite_file_and_claims_in_the_plan(tmp_path):
    text = GOOD + "claims:\n  - {id: c1, text: ext4 unpacks more files, kind: direction, filesystems: [ext4, xfs]}\n"
    p = _write(tmp_path, text)
    cfg = vmconfig.load(ROOT / "vmconfigs" / "smoke.yaml")
    plan = resolve.resolve(cfg, suite_file=str(p), profile="quick")
    assert plan.suite.name == "tar-rm" and plan.suite.file == str(p) and plan.repeat.n == 3
    (claim,) = plan.suite.claims
    assert claim["metric"] == "files" and claim["steps"] == ["untar"] and claim["better"] == "higher"
    again = Plan.from_json(json.loads(json.dumps(plan.to_json())))  # plan.json round trip
    assert again == plan
    # a vmconfig's suite_file, relative to the vmconfig
    vm = tmp_path / "vm.yaml"
    vm.write_text((ROOT / "vmconfigs" / "smoke.yaml").read_text().replace("suite: fio-basic",
                                                                          "suite_file: suite.yaml"))
    assert resolve.resolve(vmconfig.load(vm), profile="smoke").suite.name == "tar-rm"
    with pytest.raises(FslabError, match="allowed: one of --suite, --fio-job and --suite-file"):
        resolve.resolve(cfg, suite_file=str(p), suite="fio-basic")


# One test per error a user can make: (what the file has instead, the line, the words of the error).
BAD = {
    "missing command": (GOOD.replace("    command: [tar, -xf, \"{{inputs}}/{{tarball}}\"]\n", ""), 8,
                        "steps[0].command: required key is missing"),
    "bad regex": (GOOD.replace("'files: (?P<value>[0-9]+)'", "'files: ([0-9]+'"), 13,
                  "steps[0].metrics[0].regex: 'files: ([0-9]+' is not a regular expression: missing )"),
    "regex without value group": (GOOD.replace("(?P<value>[0-9]+)", "([0-9]+)"), 13,
                                  "has no group named value"),
    "unknown key": (GOOD.replace("    cold: true\n    command: [tar",
                                 "    cold: true\n    timeout: 5\n    command: [tar"), 11,
                    "steps[0].timeout: unknown key; allowed: name, command, shell, cwd, env, timed, cold, metrics"),
    "metric without unit": (GOOD.replace("unit: files, ", ""), 13, "steps[0].metrics[0].unit: required key is missing"),
    "metric without direction": (GOOD.replace("better: higher", "better: up"), 13,
                                 "steps[0].metrics[0].better: 'up' is not allowed; allowed: higher, lower"),
    "string without shell": (GOOD.replace("    shell: true\n", ""), 17,
                             "steps[1].command: a string is run through no shell"),
    "unknown variable": (GOOD.replace("{{tarball}}", "{{tarbal}}"), 11,
                         "steps[0].command: {{tarbal}} is not a variable; allowed: inputs, tarball"),
    "headline not a metric": (GOOD.replace("headline: files", "headline: iops"), 19,
                              "headline: iops is not a metric of this suite; allowed: real_s, cpu_s, user_s, "
                              "sys_s, files"),
    "missing input": (GOOD.replace("inputs: [tree.tar]", "inputs: [nothere.tar]"), 3,
                      "inputs[0]: nothere.tar: no such file or directory"),
    "cwd outside the mount": (GOOD.replace("    cwd: work\n    cold: true\n    command: rm",
                                           "    cwd: ../x\n    cold: true\n    command: rm"), 15,
                              "steps[1].cwd: '../x' is not allowed"),
    "duplicate key": (GOOD.replace("headline: files", "headline: files\nheadline: real_s"), 20,
                      "not valid YAML: key 'headline' is given twice (lines 19 and 20)"),
    "built-in name": (GOOD.replace("name: tar-rm", "name: random-io"), 1, "name: random-io is a built-in suite"),
    "step metric name": (GOOD.replace("name: files,", "name: real_s,").replace("headline: files", "headline: real_s"),
                         13, "steps[0].metrics[0].name: real_s is a step's own metric"),
    "duplicate step": (GOOD.replace("name: rm", "name: untar"), 14, "untar is used twice"),
    "io on an untimed step": (GOOD.replace("  - {name: workdir, command: [mkdir, -p, work]}",
                                           "  - {name: workdir, command: [mkdir, -p, work], io: {ops: 1}}"), 6,
                              "setup[0].io: unknown key"),
    "io of an unknown metric": (GOOD.replace("    shell: true\n", "    shell: true\n    io: {ops: nfiles}\n"), 19,
                                "steps[1].io.ops: nfiles is not a metric of this suite; allowed: a number or one of "
                                "files"),
    "variable named inputs": (GOOD.replace("variables: {tarball: tree.tar}", "variables: {inputs: /tmp}"), 4,
                              "variables: inputs is the directory of the inputs in the guest"),
    "silent not a duration": (GOOD.replace("    shell: true\n", "    shell: true\n    silent: soon\n"), 19,
                              "steps[1].silent: 'soon' is not allowed; allowed:"),
    "claim of one filesystem": (GOOD + "claims:\n  - {id: c, text: t, kind: direction, filesystems: [ext4]}\n", 24,
                                "claims[0].filesystems: ['ext4'] is not allowed"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_file_is_one_line_with_file_line_and_key(tmp_path, case):
    text, line, words = BAD[case]
    p = _write(tmp_path, text)
    with pytest.raises(FslabError) as e:
        suite_file.load(p, tuple(suites.registry()))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{p}: line {line}: "), msg
    assert words in msg, msg


def test_input_too_big_is_refused_before_the_boot(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_file, "MAX_INPUT_BYTES", 999)
    p = _write(tmp_path, GOOD)
    with pytest.raises(FslabError, match=rf"^{p}: line 3: inputs\[0\]: tree.tar is 1000 B, the inputs 1000 B in all; "
                       r"allowed: at most 999 B in all \(they travel on the seed\)$"):
        suite_file.load(p)


def test_cli_says_the_error_in_one_line_and_exits_2(tmp_path):
    p = _write(tmp_path, BAD["bad regex"][0])
    cp = subprocess.run([sys.executable, "-m", "harness.cli", "show-config", "vmconfigs/smoke.yaml", "--suite-file",
                         str(p)], cwd=ROOT, capture_output=True, text=True)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.strip().splitlines() == [f"fslab: error: {p}: line 13: steps[0].metrics[0].regex: 'files: "
                                              "([0-9]+' is not a regular expression: missing ), unterminated "
                                              "subpattern at position 7"]


def test_seed_carries_inputs_and_mounts_them(tmp_path):
    p = _write(tmp_path, GOOD)
    plan = resolve.resolve(vmconfig.load(ROOT / "vmconfigs" / "smoke.yaml"), suite_file=str(p), profile="smoke")
    runcmd = yaml.safe_load(seed.user_data(plan))["runcmd"]
    assert runcmd[:2] == [["mkdir", "-p", "/run/fslab/seed"],
                          ["mount", "-t", "iso9660", "-o", "ro", "LABEL=cidata", "/run/fslab/seed"]]
    assert seed.graft_points(plan) == [f"inputs/tree.tar={tmp_path / 'tree.tar'}"]
    (tmp_path / "tree.tar").write_bytes(b"changed")
    with pytest.raises(FslabError, match="changed since the plan was made"):
        seed.graft_points(plan)
    # a plan without inputs: the seed as before
    plain = resolve.resolve(vmconfig.load(ROOT / "vmconfigs" / "smoke.yaml"))
    assert yaml.safe_load(seed.user_data(plain))["runcmd"] == [["/usr/local/bin/fslab-guest", "run",
                                                                "/run/fslab/plan.json"]]


def test_directory_input_hash_is_its_sha256sum_listing(tmp_path):
    d = tmp_path / "data"
    (d / "sub").mkdir(parents=True)
    (d / "a").write_bytes(b"a")
    (d / "sub" / "b").write_bytes(b"bb")
    digest, size, files = suite_file.hash_input(d)
    listing = "".join(f"{hashlib.sha256(c).hexdigest()}  {n}\n" for n, c in (("a", b"a"), ("sub/b", b"bb")))
    assert (digest, size, files) == (hashlib.sha256(listing.encode()).hexdigest(), 3, 2)
    (d / "link").symlink_to("a")
    with pytest.raises(ValueError, match="not a regular file"):
        suite_file.hash_input(d)


def test_extracted_metrics_become_records_with_their_direction(tmp_path):
    sf = _load(tmp_path, GOOD.replace("better: higher", "better: lower"))
    (case,) = sf.suite.cases("smoke")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "untar.stdout").write_text("unpacked\nfiles: 120\n")
    (raw / "rm.stdout").write_text("")
    steps = [{"name": "untar", "timed": True, "rc": 0, "real_s": 2.0, "user_s": 0.1, "sys_s": 0.5},
             {"name": "rm", "timed": True, "rc": 0, "real_s": 1.0, "user_s": 0.0, "sys_s": 0.2}]
    base = {"suite": "tar-rm", "case": "tar-rm", "fs": "ext4", "rep": 0, "ok": True, "accel": "tcg"}
    recs = steps_records(steps, case.steps, raw, base)
    (files,) = [r for r in recs if r["metric"] == "files"]
    assert files["value"] == 120.0 and files["unit"] == "files" and files["better"] == "lower" and files["ok"]
    (raw / "untar.stdout").write_text("nothing here\n")
    (files,) = [r for r in steps_records(steps, case.steps, raw, base) if r["metric"] == "files"]
    assert files["ok"] is False and files["value"] is None
    assert files["error"] == "step untar: metric files: regex 'files: (?P<value>[0-9]+)' matched nothing in stdout"


def _run(values: dict[str, list[float]], better: str, claims: list | None = None) -> Run:
    recs = [{"suite": "s", "case": "c", "fs": fs, "metric": "score", "value": v, "unit": "points", "rep": i,
             "ok": True, "step": "go", "better": better}
            for fs, vs in values.items() for i, v in enumerate(vs)]
    plan = {"suite": {"name": "s", "profile": "quick", "headline": "score", "claims": claims or []},
            "filesystems": [{"name": fs} for fs in values]}
    return Run(Path("r"), {"plan": plan, "accel": "kvm"}, recs, "r")


def test_ranking_follows_the_direction_the_records_carry():
    vals = {"ext4": [10.0, 10.2, 9.9], "xfs": [20.0, 20.1, 19.8]}
    assert stats.higher_is_better("score", "points") is None  # the name and unit alone say nothing
    for better, first in (("higher", "xfs"), ("lower", "ext4")):
        (g,) = ranking.rank_run(_run(vals, better))
        (q,) = g.quantities
        assert g.higher is (better == "higher") and q.entries[0].fs == first
        assert q.entries[1].vs_next == "worse"


def test_declared_metrics_are_ranked_where_a_step_gives_them():
    run = _run({"ext4": [10.0, 10.2, 9.9], "xfs": [20.0, 20.1, 19.8]}, "lower")
    run.plan["suite"]["headline"] = "real_s"
    run.plan["cases"] = [{"id": "c", "steps": [{"name": "go", "extract": [{"metric": "score"}]}, {"name": "t"}]}]
    run.records += [{**r, "step": "t", "metric": "real_s", "unit": "s", "better": None}
                    for r in list(run.records)]
    assert run.headline_metrics() == ["real_s", "cpu_s", "score"]
    groups = {g.metric: g for g in ranking.rank_run(run)}
    assert [q.step for q in groups["score"].quantities] == ["go"]  # not an empty row beside step t
    assert groups["score"].higher is False and not groups["score"].primary
    assert groups["score"].quantities[0].entries[0].fs == "ext4"


def test_file_claims_are_judged_with_the_metric_direction():
    claim = {"id": "c1", "text": "ext4 scores lower", "kind": "direction", "filesystems": ["ext4", "xfs"],
             "metric": "score", "steps": ["go"], "source": "", "paper": "", "better": "lower"}
    run = _run({"ext4": [10.0, 10.2, 9.9], "xfs": [20.0, 20.1, 19.8]}, "lower", [claim])
    (c,) = file_claims(run)
    assert c.higher_is_better is False and c.suite == "s"
    (row,) = evaluate([run])
    assert row.verdict == "holds"


def test_contract_doc_lists_the_keys_of_the_code():
    """FSLAB_UPDATE_GOLDEN=1 pytest tests/test_suite_file.py rewrites the table from the code."""
    path = ROOT / "docs" / "contracts.md"
    doc = path.read_text()
    start, end = doc.index(suite_file_keys.BEGIN), doc.index(suite_file_keys.END) + len(suite_file_keys.END) + 1
    if os.environ.get("FSLAB_UPDATE_GOLDEN"):
        path.write_text(doc[:start] + suite_file_keys.keys_markdown() + doc[end:])
        return
    assert doc[start:end] == suite_file_keys.keys_markdown(), "docs/contracts.md: regenerate the suite-file keys table"


def test_the_shipped_example_loads(tmp_path):
    text = (ROOT / "tests" / "suites" / "tar-rm.yaml").read_text()
    sf = _load(tmp_path, text)
    assert sf.suite.name == "tar-rm" and [i.name for i in sf.inputs] == ["tree.tar"]
    assert sf.metrics == {"files": {"unit": "files", "better": "higher"},
                          "tree_bytes": {"unit": "B", "better": "higher"}, "dirs": {"unit": "dirs", "better": "higher"}}
    (case,) = sf.suite.cases("smoke")
    untar = next(s for s in case.steps if s.name == "untar")
    assert untar.fields == {"asks_read_bytes": 0, "asks_write_bytes": "tree_bytes", "asks_settled": True}


def test_compare_refuses_runs_of_different_suite_files_or_inputs():
    from harness.analysis.compare import differences

    a = {"accel": "tcg", "image": {"digest": "d"}, "plan": {"suite": {"name": "s", "version": 1, "profile": "q",
                                                                     "sha256": "aa"},
                                                           "inputs": [{"name": "t.tar", "sha256": "11"}]}}
    same = json.loads(json.dumps(a))
    assert differences(a, same) == []
    b = json.loads(json.dumps(a))
    b["plan"]["suite"]["sha256"], b["plan"]["inputs"][0]["sha256"] = "bb", "22"
    assert differences(a, b) == ["suite file sha256: aa (A) vs bb (B)", "suite input t.tar: sha256 11 (A) vs 22 (B)"]


def test_compare_verdict_follows_the_records_direction():
    from harness.analysis.compare import compare_baseline

    run = _run({"ext4": [10.0, 10.2, 9.9], "xfs": [20.0, 20.1, 19.8]}, "lower")
    (row,) = [r for r in compare_baseline(run, "ext4", ["score"]) if r.key.fs == "xfs"]
    assert row.verdict == "worse"
    run = _run({"ext4": [10.0, 10.2, 9.9], "xfs": [20.0, 20.1, 19.8]}, "higher")
    (row,) = [r for r in compare_baseline(run, "ext4", ["score"]) if r.key.fs == "xfs"]
    assert row.verdict == "better"
