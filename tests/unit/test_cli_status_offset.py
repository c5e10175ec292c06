"""`status RUN --offset N` past the board's end says how many tasks there are and which
offsets exist, rather than "showing tasks 1001–1000 of 4" over an empty table."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import pytest

import cli.runs_cmd
from cli.board import page_note
from cli.main import main
from xsky.leader.state import BoardPage


class _Run:
    def __init__(self, total: int) -> None:
        self.total = total

    async def temporal_status(self) -> str:
        return "completed"

    async def board(self, offset: int, limit: int, only: str | None) -> BoardPage:
        return BoardPage(total=self.total, offset=offset, counts={"completed": self.total})


class _Connection:
    def __init__(self, total: int) -> None:
        self.total = total

    async def __aenter__(self) -> _Connection:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def get(self, run_id: str) -> Any:
        return _Run(self.total)


@pytest.mark.parametrize(
    ("total", "argv", "said"),
    [
        (4, [], "--offset 1000: xsky-r-1 has only 4 tasks; give --offset 0 to 3"),
        (1, ["--json"], "--offset 1000: xsky-r-1 has only 1 task; give --offset 0 to 0"),
        (2, ["--status", "failed"], "xsky-r-1 has only 2 tasks failed; give --offset 0 to 1"),
        (0, ["--status", "failed"], "--offset 1000: no task of xsky-r-1 is failed; drop --offset"),
    ],
)
def test_an_offset_past_the_end_says_which_offsets_exist(
    total: int,
    argv: list[str],
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(cli.runs_cmd.XSky, "connect", lambda *_: _Connection(total))
    assert main(["status", "xsky-r-1", "--offset", "1000", *argv]) == 2
    text = capsys.readouterr()
    assert said in " ".join(text.err.split())
    assert text.out == ""  # (no empty table)


def test_a_page_past_the_end_is_not_called_a_range_that_runs_backwards() -> None:
    note = page_note(BoardPage(total=4, offset=1000))
    assert note == "no task at offset 1000: there are 4; --offset takes 0 to 3"
