"""harness.results.steps: a `steps` case's steps.json -> records, with random-io's derived MiB/s."""

from __future__ import annotations

from harness.results.steps import steps_records
from harness.suites import steps as as_steps

BASE = {"suite": "random-io", "case": "crear-random", "fs": "ext2", "rep": 0, "ok": True, "accel": "tcg"}


def test_dd_step_with_file_bytes_gets_its_rate(tmp_path):
    steps = [{"name": "crear-10", "timed": True, "rc": 0, "real_s": 2.5, "user_s": 0.0, "sys_s": 0.5},
             {"name": "random", "timed": True, "rc": 0, "real_s": 60.0, "user_s": 1.0, "sys_s": 2.0}]
    plan = as_steps([{"name": "crear-10", "argv": ["dd"], "fields": {"file_bytes": 10 * 2**20}},
                  {"name": "random", "argv": ["r"]}], "test")
    recs = steps_records(steps, plan, tmp_path, BASE)
    (rate,) = [r for r in recs if r["metric"] == "mib_per_s"]
    assert rate["step"] == "crear-10" and rate["value"] == 4.0 and rate["unit"] == "MiB/s"
    assert rate["file_bytes"] == 10 * 2**20 and rate["derived"] == "file_bytes / 2**20 / real_s"
    assert not [r for r in recs if r["step"] == "random" and r["metric"] == "mib_per_s"]  # no file size: no rate


def test_skipped_or_failed_step_gets_no_rate(tmp_path):
    steps = [{"name": "crear-1", "timed": True, "rc": None, "skipped": True, "reason": "does not fit"},
             {"name": "crear-10", "timed": True, "rc": 1, "real_s": 0.1, "user_s": 0.0, "sys_s": 0.0}]
    plan = as_steps([{"name": "crear-1", "argv": ["dd"], "fields": {"file_bytes": 2**20}},
                  {"name": "crear-10", "argv": ["dd"], "fields": {"file_bytes": 2**20}}], "test")
    recs = steps_records(steps, plan, tmp_path, BASE)
    assert [(r["step"], r["metric"], r["value"], r.get("skipped")) for r in recs] == [
        ("crear-1", "real_s", None, "does not fit")]
