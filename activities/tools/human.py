"""ask_user: ask a person, through the leader, and use the answer.

The first attempt ends with a ``question`` outcome (no activity waits for a person);
when the leader dispatches the task again, the answer comes with it and is the result.
"""

from __future__ import annotations

from typing import Any

from activities.tools import NeedsHuman, ToolContext, ToolResult, require_str


async def ask_user(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    question = require_str(
        args, "question", "ask_user", '{"tool": "ask_user", "question": "Which region?"}'
    )
    for answer in reversed(ctx.answers):
        if answer.question == question:
            return ToolResult(answer.answer, {"requestId": answer.request_id})
    raise NeedsHuman("question", question=question)
