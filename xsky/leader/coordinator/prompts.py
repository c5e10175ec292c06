"""The coordinator's prompts and the shape of its replies, per point of the run.

Pure text and parsing; the ``coordinate`` activity (``activities/coordinator.py``) sends
them to the model and turns the reply into a :class:`~xsky.leader.ledger.ConsultOutcome`.
The ledgers are Magentic-One's (a task ledger of facts, a progress ledger of judgments),
the "done" decision AgentKit's, the root cause after a stall Magentic-One's replanning.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xsky.leader.ledger import ConsultInput, Evidence, Point
from xsky.plan.budget import estimate_tokens

# A stored result is shown to the coordinator up to this many characters.
STORED_RESULT_CHARS = 6000
# Readings of the model's reply (the first, and one after it was shown its problems).
READINGS = 2
# The most a reply is expected to take (a JSON verdict with its reason and facts): what a
# consultation holds of the budget for each reading's answer.
ANSWER_TOKENS = 1024

SYSTEM = """You are the leader of a team of AI agents working for a person on one goal. You \
judge their work against what the person asked for, answer a worker's question when the \
goal, the facts and the results give the answer, decide whether a tool call is off the goal, \
and find why a task is stuck. Be strict but fair: accept a result that does its task even \
if it could be better, and send one back only with a concrete instruction. Judge only from \
the evidence below; when it does not let you decide, say so. Reply with one JSON object \
only, of the shape asked for."""


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reason: str = Field(min_length=1)
    facts: list[str] = Field(default_factory=list)


class ResultReply(_Reply):
    verdict: Literal["accept", "retry", "unsure"]
    instruction: str | None = None


class GoalReply(_Reply):
    verdict: Literal["met", "not_met", "unsure"]
    gap: str | None = None


class QuestionReply(_Reply):
    verdict: Literal["answer", "leave"]
    answer: str | None = None


class ApprovalReply(_Reply):
    verdict: Literal["allow", "deny", "leave"]


class StallReply(_Reply):
    verdict: Literal["instruct", "replan", "escalate"]
    root_cause: str = Field(min_length=1)
    instruction: str | None = None


REPLIES: dict[Point, type[_Reply]] = {
    "result": ResultReply,
    "goal": GoalReply,
    "question": QuestionReply,
    "approval": ApprovalReply,
    "stall": StallReply,
}

ASKS: dict[Point, str] = {
    "result": """Does this result do the task it was given (its own task — not the whole goal)?
Reply {"verdict": "accept" | "retry" | "unsure", "reason": "…", "instruction": "…", "facts": ["…"]}.
"retry" only when the result clearly fails its task, with "instruction": what the agent must \
do differently (it sees its whole conversation). "facts": what the result established that \
later tasks may need (short sentences; may be empty).""",
    "goal": """Every task is done. Taken together, do the results achieve the goal?
Reply {"verdict": "met" | "not_met" | "unsure", "reason": "…", "gap": "…", "facts": ["…"]}.
"not_met" with "gap": what is missing, written as a request to the planner that will add \
tasks for it. "unsure" when the evidence does not let you tell.""",
    "question": """A worker asks the question below. Answer it only if the goal, the facts or \
the results give the answer; otherwise leave it to the person.
Reply {"verdict": "answer" | "leave", "answer": "…", "reason": "…", "facts": []}.""",
    "approval": """A worker wants to make the tool call below, which needs approval. Is it off \
the goal or against it (doing something the person did not ask for, touching what the \
task has no business with)? You do not grant approvals: the person's delegated rules decide \
that ("delegated" says whether they cover this call). You may only deny a call that is off \
the goal, or find nothing against it.
Reply {"verdict": "deny" | "allow" | "leave", "reason": "…", "facts": []}.""",
    "stall": """The task below has made no progress for a long time. Find the root cause from \
the evidence, and say what should happen: "instruct" (it can finish with a concrete \
instruction: give it), "replan" (the plan itself is wrong: the planner gets your root cause), \
or "escalate" (only a person can unblock it).
Reply {"verdict": "instruct" | "replan" | "escalate", "root_cause": "…", "reason": "…", \
"instruction": "…", "facts": []}.""",
}

FIX = """Your reply could not be used: {problems}
Reply again with one JSON object of the shape asked for, and nothing else."""


def _evidence(e: Evidence, result: str | None) -> str:
    lines = [f"{e.task_id} ({e.name}, {e.status or 'not run'}): {e.task}"]
    if result:
        lines.append(f"  result: {result}")
    if e.error:
        lines.append(f"  error: {e.error}")
    return "\n".join(lines)


def user_message(inp: ConsultInput, results: dict[str, str]) -> str:
    """The consultation as the model reads it. ``results``: stored results' beginnings read
    by the activity, by task id (for evidence that carries only a reference)."""
    parts = [f"GOAL (what the person asked for):\n{inp.goal}"]
    if inp.facts:
        parts.append(
            "FACTS learned so far:\n" + "\n".join(f"- {f.text} ({f.source})" for f in inp.facts)
        )
    if inp.tasks:
        shown = "\n".join(_evidence(e, e.result or results.get(e.task_id)) for e in inp.tasks)
        more = f"\n({inp.omitted} more tasks not shown)" if inp.omitted else ""
        parts.append(f"THE PLAN (v{inp.plan_version}) AND ITS RESULTS:\n{shown}{more}")
    if inp.dependencies:
        parts.append(
            "WHAT THE TASK WAS GIVEN (results of the tasks it depends on):\n"
            + "\n".join(_evidence(e, e.result or results.get(e.task_id)) for e in inp.dependencies)
        )
    if inp.task is not None:
        task = inp.task
        parts.append("THE TASK:\n" + _evidence(task, task.result or results.get(task.task_id)))
    if inp.question:
        parts.append(f"THE QUESTION:\n{inp.question}")
    if inp.tool:
        arguments = json.dumps(inp.arguments or {}, ensure_ascii=False)[:2000]
        parts.append(
            f"THE TOOL CALL:\n{inp.tool}({arguments})\ndelegated: {str(inp.delegated).lower()}"
        )
    if inp.stalled:
        parts.append(f"THE STALL:\n{inp.stalled}")
    if inp.earlier:
        parts.append("EARLIER JUDGMENTS OF THIS TASK:\n" + "\n".join(f"- {e}" for e in inp.earlier))
    parts.append(ASKS[inp.point])
    return "\n\n".join(parts)


def consult_tokens(inp: ConsultInput) -> int:
    """About how many tokens the consultation's first request holds (system prompt and
    message, each stored result counted at the most the activity shows of it): what the leader
    reserves for it before the call (xsky/leader/coordinator/judgment.py)."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_message(inp, {})},
    ]
    shown = [*inp.tasks, *inp.dependencies, *([inp.task] if inp.task is not None else [])]
    stored = sum(1 for e in shown if e.result is None and e.result_ref is not None)
    return estimate_tokens(messages, None) + stored * (STORED_RESULT_CHARS // 3)


def read_reply(point: Point, text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the reply's fields, or None; what is wrong with it)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("{") :] if "{" in body else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None, "it holds no JSON object"
    try:
        data = json.loads(body[start : end + 1])
    except (ValueError, RecursionError) as e:  # (nested deeper than the parser goes)
        return None, f"it is not valid JSON ({e})"
    try:
        reply = REPLIES[point].model_validate(data)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'reply'}: {err['msg']}" for err in e.errors()
        )
        return None, problems
    fields = reply.model_dump()
    if point == "result" and fields["verdict"] == "retry" and not fields.get("instruction"):
        return None, 'a "retry" needs an "instruction"'
    if point == "question" and fields["verdict"] == "answer" and not fields.get("answer"):
        return None, 'an "answer" verdict needs the "answer"'
    if point == "stall" and fields["verdict"] == "instruct" and not fields.get("instruction"):
        return None, 'an "instruct" verdict needs the "instruction"'
    if point == "goal" and fields["verdict"] == "not_met" and not fields.get("gap"):
        return None, 'a "not_met" verdict needs the "gap"'
    return fields, None
