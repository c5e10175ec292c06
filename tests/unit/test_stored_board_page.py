"""`status` of a large run that ended reads the board the run stored (RunResult.board_ref):
a page of it is made into models, not the whole board (10,000 TaskViews for 200 rows), and
the page is the one BoardPage.page makes of the whole board's models."""

from __future__ import annotations

import json

import pytest

from client.run import stored_board_page
from xsky.leader.state import BoardPage, PageRequest
from xsky.leader.tasks import TaskView

STATUSES = ("completed", "failed", "skipped", "cancelled")


def _board(n: int) -> BoardPage:
    tasks = [
        TaskView(
            id=f"T-{i}",
            agent_id=str(i),
            session_id="run",
            subject=f"s{i}",
            description="d",
            assigned_agent="llm",
            status=STATUSES[i % 7 % 4],
            result=f"r{i}" if i % 3 else None,
            attempt=1 + i % 2,
        )
        for i in range(n)
    ]
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t.status] = counts.get(t.status, 0) + 1
    return BoardPage(total=n, offset=0, counts=counts, tasks=tasks, state="finishing", notes=["n"])


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"offset": 250, "limit": 20},
        {"offset": 0, "limit": 2000},
        {"status": "failed", "limit": 5},
        {"status": "skipped", "offset": 40, "limit": 7},
        {"status": "blocked"},  # none of them: total 0
        {"offset": 999},  # past the end: an empty page, as the query's
    ],
)
def test_a_stored_boards_page_is_the_page_of_its_models(request_: dict[str, object]) -> None:
    board = _board(300)
    text = board.model_dump_json()
    req = PageRequest.model_validate(request_)
    want = BoardPage.model_validate_json(text).page(req)
    got = stored_board_page(json.loads(text), req)
    assert got == want
    assert got.model_dump_json() == want.model_dump_json()


def test_only_the_pages_tasks_are_made_into_models() -> None:
    # A row outside the page is not decoded (it would not validate as a TaskView): the
    # 200 rows shown cost 200 models whatever the board's size.
    wire = json.loads(_board(50).model_dump_json())
    wire["tasks"][40]["attempt"] = "not a number"
    page = stored_board_page(wire, PageRequest(offset=0, limit=20))
    assert [t.id for t in page.tasks] == [f"T-{i}" for i in range(20)] and page.total == 50
    with pytest.raises(ValueError):
        BoardPage.model_validate(wire)
