"""The board's agent column says what a task is: a watch's poll is a watch, not the kind of the
queue it runs on (a timer's or a URL's poll runs on the llm kind's queue, and read as a model's)."""

from __future__ import annotations

from rich.console import Console

from cli.board import board_table
from xsky.leader.tasks import TaskView


def _task(agent_id: str, kind: str) -> TaskView:
    return TaskView(
        id=f"T-{agent_id}",
        agent_id=agent_id,
        session_id="run",
        subject="s",
        description="d",
        assigned_agent=kind,
        status="completed",
    )


def test_a_watchs_poll_shows_as_a_watch_and_every_other_task_as_its_kind() -> None:
    console = Console(width=200, record=True)
    console.print(
        board_table([_task("w.poll[1]", "llm"), _task("w[1]", "shell"), _task("s", "llm")])
    )
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in console.export_text().splitlines()
        if line.startswith("│")
    }
    assert rows == {"T-w.poll[1]": "watch", "T-w[1]": "shell", "T-s": "llm"}
