"""An unreachable server: the CLI answers with `starter.py up` (which registers xsky's search
attributes) wherever it says the error — `skills status` too, which quoted the library's words;
the library's own fix speaks to its callers and names no command of the CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cli.main import main
from client.connect import connect_client
from xsky.config import load_settings
from xsky.errors import ConnectError


def test_the_connect_error_speaks_to_the_librarys_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")  # nothing listens there
    with pytest.raises(ConnectError) as said:
        asyncio.run(connect_client(load_settings()))
    assert said.value.fix is not None and "search attributes" in said.value.fix
    assert "start-dev" not in str(said.value) and "starter.py" not in str(said.value)
    assert said.value.topic == "connect"  # (the CLI words its own fix from it)


def test_skills_status_without_a_server_says_starter_py_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "user.json"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "home"))
    assert main(["skills", "status"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "watch unknown: cannot reach Temporal at 127.0.0.1:1" in said
    assert "`python starter.py up`" in said
    assert "start-dev" not in said


def test_a_server_that_does_not_answer_is_not_said_to_be_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # chaos11: with the server frozen (SIGSTOP), every command waited ~34 s and then said to
    # start a server — and `starter.py up` said one was up.
    from temporalio.client import Client

    async def frozen(*args: object, **kwargs: object) -> Client:
        raise RuntimeError(
            "Failed client connect: Server connection error: tonic::transport::Error(Transport, TimeoutExpired(()))  timed out"
        )

    monkeypatch.setattr(Client, "connect", frozen)
    with pytest.raises(ConnectError) as said:
        asyncio.run(connect_client(load_settings()))
    assert said.value.topic == "connect-timeout" and "nothing answered in time" in str(said.value)
    assert said.value.fix is not None and "frozen" in said.value.fix
    assert "starter.py" not in said.value.fix  # (the library's words)
    assert main(["status", "xsky-some-run"]) != 0
    printed = " ".join(capsys.readouterr().err.split())
    assert "nothing answered in time" in printed and "frozen" in printed, printed
    assert "start a local server" not in printed
