"""`starter.py ui` without a run id says so when the Temporal server cannot be reached (walk10:
it printed its link and nothing else, and the page showed no runs); it still starts."""

from __future__ import annotations

import socket

import pytest

from cli.ui_cmd import _check_server
from xsky.config import load_settings


def test_ui_says_when_the_server_cannot_be_reached(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("TEMPORAL_ADDRESS", f"127.0.0.1:{port}")
    _check_server(load_settings())
    said = " ".join(capsys.readouterr().err.split())
    assert f"note: cannot reach Temporal at 127.0.0.1:{port}" in said, said
    assert "starter.py up" in said and "the page shows runs once the server answers" in said
