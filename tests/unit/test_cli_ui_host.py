"""`ui --host H` where H is not this machine's names the host as the mistake, not the port."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main


@pytest.mark.parametrize("host", ["8.8.8.8", "192.0.2.1", "no-such-host.invalid"])
def test_a_host_that_is_not_this_machines_is_named_as_the_mistake(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path))
    assert main(["ui", "--host", host, "--port", "38556"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"cannot listen on {host}:38556" in said
    assert f"{host} is not an address of this machine; give one of its own with --host" in said
    assert "--port" not in said
