"""A request's id typed as a person types it: `answer RUN q-1` was refused as no such request
(the run names it Q-1)."""

from __future__ import annotations

import pytest

from cli.main import build_parser


@pytest.mark.parametrize(
    ("command", "typed", "sent"),
    [
        ("answer", "q-1", "Q-1"),
        ("answer", " e-12 ", "E-12"),
        ("approve", "a-3", "A-3"),
        ("approve", "A-3", "A-3"),
        ("answer", "question-1", "question-1"),  # not a request's id: refused by the run, as typed
    ],
)
def test_a_request_id_is_taken_in_either_case(command: str, typed: str, sent: str) -> None:
    extra = ["the text"] if command == "answer" else []
    args = build_parser(command).parse_args([command, "run-1", typed, *extra])
    assert args.request == sent


def test_a_misspelt_task_id_is_answered_with_the_id_it_is_closest_to() -> None:
    """`log RUN T-regoin` listed the tasks and no more."""
    from client.steer import no_task

    ids = [f"T-{i}" for i in ("fetch", "region", "report")] + [f"T-x{i}" for i in range(30)]
    said = str(no_task("T-regoin", ids, "run-1"))
    assert said.startswith(
        "no task 'T-regoin' in run-1 — did you mean T-region?; tasks: T-fetch"
    ), said
    assert "(33 in all)" in said
    assert "did you mean" not in str(no_task("T-zzzzzz", ids, "run-1"))
