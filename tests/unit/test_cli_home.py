"""XSKY_HOME that is a file: the error says the home must be a folder, not "File exists"."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main


@pytest.mark.parametrize("command", [["server"], ["ui", "--port", "1"]])
def test_a_home_that_is_a_file_is_said_to_be_one(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `server` creates the home ("File exists"), `ui` a file in it ("Not a directory").
    home = tmp_path / "afile"
    home.write_text("")
    monkeypatch.setenv("XSKY_HOME", str(home))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    assert main(command) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"XSKY_HOME ({home}) is a file, not a folder" in said
    assert "set XSKY_HOME to a folder" in said
    assert home.read_text() == ""  # (left as it was)


def test_the_default_home_that_is_a_file_is_named_as_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".xsky").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XSKY_HOME", raising=False)
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    assert main(["server"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "xsky's home, .xsky here (XSKY_HOME is not set), is a file, not a folder" in said
