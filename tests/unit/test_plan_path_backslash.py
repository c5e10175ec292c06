"""A plan's path written as Windows writes one (walk12): `validate plans\\a.xml` and a path
copied from Explorer said only 'no such file' — here a backslash is part of a name, not a
separator. The refusal says so, and names the file the path means when there is one."""

from __future__ import annotations

from pathlib import Path

import pytest

from xsky.errors import UsageError
from xsky.plan.files import read_plan_bytes


def _said(path: str) -> str:
    with pytest.raises(UsageError) as e:
        read_plan_bytes(path)
    return str(e.value)


def test_backslashes_name_the_file_they_mean(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "a.xml").write_text("<workflow name='a'/>")
    monkeypatch.chdir(tmp_path)
    said = _said("plans\\a.xml")
    assert said.startswith("plans\\a.xml: no such file; give the path of a workflow XML file")
    assert "(did you mean plans/a.xml? folders are separated by '/' here, not '\\')" in said


def test_backslashes_to_nothing_say_how_folders_are_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    said = _said("plans\\b.xml")
    assert said.endswith("(folders are separated by '/' here, not '\\')")
    assert "did you mean" not in said


def test_a_drive_letter_is_said_to_be_a_windows_path() -> None:
    said = _said("C:\\Users\\me\\plan.xml")
    assert "a Windows path (a drive letter) names no file on this machine" in said


def test_a_plain_missing_path_is_said_as_before(tmp_path: Path) -> None:
    missing = tmp_path / "nope.xml"
    assert _said(str(missing)) == f"{missing}: no such file; give the path of a workflow XML file"
