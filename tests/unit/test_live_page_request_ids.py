"""The live page takes a request's id as the CLI does (walk11: `starter.py answer RUN q-1 …`
answered Q-1, the page refused "no request 'q-1'; pending requests: Q-1"), and says what an
empty id box is rather than "answer needs request"."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cli.ui.server import _act
from xsky.errors import UsageError
from xsky.leader.state import InterventionResult


class FakeRun:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def answer(self, request: str, text: str) -> InterventionResult:
        self.calls.append(("answer", request))
        return InterventionResult(message=f"{request} answered")

    async def approve(self, request: str, decision: str, text: Any) -> InterventionResult:
        self.calls.append(("approve", request))
        return InterventionResult(message=f"{request} approved")


def test_a_request_id_typed_in_lower_case_is_the_runs() -> None:
    run = FakeRun()
    asyncio.run(_act(run, {"action": "answer", "request": " q-1 ", "text": "the team"}))  # type: ignore[arg-type]
    asyncio.run(_act(run, {"action": "approve", "request": "a-2"}))  # type: ignore[arg-type]
    assert run.calls == [("answer", "Q-1"), ("approve", "A-2")]


def test_an_empty_request_box_is_named_with_where_its_id_is_shown() -> None:
    with pytest.raises(UsageError) as said:
        asyncio.run(_act(FakeRun(), {"action": "answer", "text": "the team"}))  # type: ignore[arg-type]
    assert "answer needs the request's id (Q-1, E-1 or A-1" in str(said.value)
