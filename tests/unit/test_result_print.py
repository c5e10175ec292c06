"""``starter.py result ID --agent N``: the agent's result printed as it is — a long line not
broken by newlines at the piped width, and a large result printed in time linear in its size."""

from __future__ import annotations

import argparse
import io
import time
from types import SimpleNamespace

from cli import render, status_cmd
from client import XSky
from xsky.runs import AgentReport


class FakeRun:
    def __init__(self, text: str) -> None:
        self.text = text

    async def agent_result(self, agent, result, so_far):
        return AgentReport(id="1", task_id="T-1", name="shell", status="completed"), self.text


class FakeXSky:
    def __init__(self, text: str) -> None:
        self.run = FakeRun(text)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return None

    async def get(self, run_id):
        return self.run


async def printed(monkeypatch, text: str) -> tuple[str, float]:
    sink = io.StringIO()
    # (the console's own file, not its ``file`` property: undone, setting that property would
    # leave the console writing for good to the stream pytest captured when it was read — a
    # later test's capsys then saw nothing)
    monkeypatch.setattr(render.out, "_file", sink)
    monkeypatch.setattr("xsky.config.load_settings", lambda: SimpleNamespace())
    monkeypatch.setattr(XSky, "connect", staticmethod(lambda settings: FakeXSky(text)))
    args = argparse.Namespace(id="r", agent="1", wait=False, json=False)
    began = time.monotonic()
    assert await status_cmd.cmd_result(args) == 0
    return sink.getvalue(), time.monotonic() - began


async def test_a_long_line_is_printed_whole(monkeypatch):
    text = "a" * 1000 + "\nsecond line\n" + "b" * 500
    out, _ = await printed(monkeypatch, text)
    assert out == text + "\n"


async def test_a_large_result_is_printed_in_linear_time(monkeypatch):
    # one 8 MiB line: ~1 s here; wrapped at 160 columns it took minutes (rich re-copies the
    # rest of the line for each row)
    text = "c" * (8 << 20)
    out, took = await printed(monkeypatch, text)
    assert out == text + "\n"
    assert took < 15, took
