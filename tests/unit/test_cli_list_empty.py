"""`list` with a filter that matches nothing says so, not "no runs yet" (runs may exist)."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import pytest

import cli.runs_cmd
from cli.main import main


class _NoRuns:
    """A connection whose every listing is empty (what a filter matching nothing gets)."""

    async def __aenter__(self) -> _NoRuns:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def runs(self, *_: Any, **__: Any) -> list[Any]:
        return []


@pytest.mark.parametrize(
    "filters",
    [["--descendants", "nosuch"], ["--plan", "nosuch"], ["--failed"], ["--query", "x = 'y'"]],
)
def test_a_filter_that_matches_nothing_says_no_runs_match(
    filters: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli.runs_cmd.XSky, "connect", lambda *_: _NoRuns())
    assert main(["list", *filters]) == 0
    said = capsys.readouterr().out
    assert "no runs match these filters" in said
    assert "no runs yet" not in said


def test_no_filter_and_no_runs_says_how_to_start_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli.runs_cmd.XSky, "connect", lambda *_: _NoRuns())
    assert main(["list"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "no runs yet: start one with" in said
    # a command that works as written: examples/demo.xml reads a site only `demo` serves
    # (its browser and http agents failed, refused by the egress proxy — walk10)
    assert "run examples/demo.xml" not in said and "`starter.py demo`" in said
    assert "`starter.py run examples/chain.xml --follow`" in said
