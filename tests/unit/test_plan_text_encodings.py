"""A plan file's text is read as XML reads it (walk10: `convert` of a native plan saved as UTF-16
by a Windows editor wrote its bytes read as UTF-8 — a NUL after every character — and a Latin-1
plan with its declaration kept its `encoding="ISO-8859-1"` over text written as UTF-8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from xsky.plan.files import load_plan, plan_text

PLAN = '<workflow name="enc">\n  <agent name="llm" id="1"><task>Écrire</task><input>x</input></agent>\n</workflow>\n'


@pytest.mark.parametrize(
    "data",
    [
        PLAN.encode("utf-16"),  # with its byte order mark, as Notepad's "Unicode" saves it
        PLAN.encode("utf-32"),
        b"\xef\xbb\xbf" + PLAN.encode(),
        ('<?xml version="1.0" encoding="UTF-16"?>\n' + PLAN).encode("utf-16"),
        ('<?xml version="1.0" encoding="ISO-8859-1"?>\n' + PLAN).encode("latin-1"),
    ],
)
def test_a_plans_text_is_decoded_as_xml_reads_it_and_declared_utf8(data: bytes) -> None:
    text = plan_text(data)
    assert "\x00" not in text and "\ufffd" not in text and "\ufeff" not in text
    assert "<task>Écrire</task>" in text
    assert "ISO-8859-1" not in text and "UTF-16" not in text  # the declaration says UTF-8


def test_convert_of_a_utf16_native_plan_writes_a_plan_that_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "plan.xml"
    source.write_bytes(PLAN.encode("utf-16"))
    out = tmp_path / "out.xml"
    assert main(["convert", str(source), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == PLAN
    assert load_plan(out).workflow.agents[0].task == "Écrire"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_a_plan_saved_as_utf16_or_utf32_without_a_byte_order_mark_validates_and_converts(
    encoding: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """walk11: a UTF-16 plan without its mark failed "Document is empty" (big endian) or "Char
    0x0 out of allowed range" (little endian); convert wrote a UTF-32 one with its NULs."""
    source = tmp_path / "plan.xml"
    source.write_bytes(PLAN.encode(encoding))
    assert load_plan(source).workflow.agents[0].task == "Écrire"
    assert main(["validate", str(source)]) == 0
    out = tmp_path / "out.xml"
    assert main(["convert", str(source), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == PLAN
