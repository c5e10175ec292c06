"""`starter.py roles` names the settings files that define the roles it lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main


def test_the_roles_table_names_the_user_settings_file_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "mine.json"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["roles"]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    assert f"built-ins < {tmp_path / 'mine.json'} < .xsky/settings.json" in title
