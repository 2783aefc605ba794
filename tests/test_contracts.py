"""docs/contracts.md stays true: its plan section is generated from the dataclasses, and the names
it lists exist in the code that writes them."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from harness.guest_programs import GUEST_DIR, load_program
from harness.plan.contract_doc import BEGIN, END, plan_fields_markdown
from harness.results.stream import STREAM_FORMATS

fslab_guest = load_program("guest", "fslab_guest_contracts")

DOC = Path(__file__).resolve().parent.parent / "docs" / "contracts.md"


def test_plan_section_is_the_dataclasses():
    text = DOC.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END) + 1
    if os.environ.get("FSLAB_UPDATE_GOLDEN"):
        DOC.write_text(text[:start] + plan_fields_markdown() + text[end:])
        text = DOC.read_text()
        start, end = text.index(BEGIN), text.index(END) + len(END) + 1
    assert text[start:end] == plan_fields_markdown(), "run FSLAB_UPDATE_GOLDEN=1 pytest tests/test_contracts.py"


def test_stream_members_the_doc_lists_are_the_agents():
    """Every member name pattern the agent writes is in the doc's list, and the other way round."""
    agent = Path(fslab_guest.__file__).read_text()
    doc = DOC.read_text()
    members = doc[doc.index("## Results channel"):doc.index("## Run directory")]
    documented = set(re.findall(r"([A-Za-z_]+\.(?:json|txt|log|fio|stderr|stdout))", members))
    schema = json.loads((GUEST_DIR / "stream_schema.json").read_text())
    names = {m["name"].rsplit("/", 1)[-1] for m in schema["members"]}
    for name in sorted(n for n in names if "<" not in n):
        assert name in documented, name
        assert name in agent, name
    assert ".std{stream}" in agent and "<step>.stdout" in doc


def test_the_agents_stream_format_is_one_the_host_reads():
    assert fslab_guest.STREAM_FORMAT == max(STREAM_FORMATS)
    assert "\"stream_format\": N" in DOC.read_text()


def test_a_disk_setting_missing_from_an_old_plan_takes_its_declared_default():
    """A setting added after a plan was recorded (fslab reproduce of an older run) is what QEMU did
    by default then: its declared default; only `size` has none."""
    from harness.plan.disk import SETTINGS, Disk

    d = Disk.from_json({"id": "d0", "size_bytes": 1 << 30})
    assert d.measured() == {"size_bytes": 1 << 30, **{s.field: s.default for s in SETTINGS if s.key != "size"}}
