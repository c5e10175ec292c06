"""Structured outputs in whole runs: an agent with an ``<output>`` schema whose first answer
is not JSON is shown the errors and corrected on its second try, and a dependent reads one
field of its result through ``{{agent_N_result.field}}``; one that never fits fails with the
errors after a bounded number of corrections, not retried by Temporal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, first_user, text, turn_of
from tests.integration.helpers import plan
from xsky.plan.agent_config import RetryOptions
from xsky.plan.output_schema import CORRECTION_HEAD, OUTPUT_RETRIES
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
    "required": ["title", "year"],
}
BOOK = (
    '<agent name="llm" id="1"><task>Find a classic science fiction book</task>'
    f"<output>{json.dumps(SCHEMA)}</output></agent>"
)
REVIEW = (
    '<agent name="llm" id="2" depends="1">'
    "<task>Write one line about {{agent_1_result.title}}</task></agent>"
)


async def test_an_invalid_answer_is_corrected_and_a_dependent_reads_one_field(
    env: Env, fake_llm: FakeLLM
) -> None:
    def responder(req: dict[str, Any], i: int) -> Reply:
        if "Write one line about" in first_user(req):
            return text("a line about the book")
        if turn_of(req) == 0:
            return text("Sure! The book is Dune (1965).")  # not JSON
        return text('{"title": "Dune", "year": 1965}')

    fake_llm.responder = responder
    await env.start_worker()
    result = await env.run(plan(BOOK, REVIEW))
    assert result.status == "completed", result.summary
    book = [r for r in fake_llm.requests if "science fiction" in first_user(r)]
    assert len(book) == 2  # the first answer was sent back once
    assert all(r.get("response_format") == {"type": "json_object"} for r in book)
    assert '"required": [\n    "title",' in first_user(book[0])  # the schema was shown
    sent_back = book[1]["messages"][-1]
    assert sent_back["role"] == "user" and sent_back["content"].startswith(CORRECTION_HEAD)
    assert "the answer is not valid JSON" in sent_back["content"]
    assert json.loads(result.agents[0].result or "") == {"title": "Dune", "year": 1965}
    (review,) = [r for r in fake_llm.requests if "Write one line about" in first_user(r)]
    assert "Write one line about Dune\n" in first_user(review) + "\n"
    assert "response_format" not in review  # no schema, no JSON mode


async def test_an_answer_that_never_fits_fails_with_its_errors_and_is_not_retried(
    env: Env, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda req, i: text('{"title": 7}')
    await env.start_worker()
    options = RunOptions(
        max_auto_replans=0, retry=RetryOptions(maximum_attempts=3, initial_interval=0.1)
    )
    result = await env.run(plan(BOOK), options=options)
    (a,) = result.agents
    assert a.status == "failed"
    # one answer and OUTPUT_RETRIES corrections, in one attempt: Temporal did not retry it
    assert len(fake_llm.requests) == OUTPUT_RETRIES + 1
    assert [turn_of(r) for r in fake_llm.requests] == list(range(OUTPUT_RETRIES + 1))
    error = a.error or ""
    assert f"did not match the output schema after {OUTPUT_RETRIES + 1} tries" in error
    assert "'year' is a required property" in error and "7 is not of type 'string'" in error
    assert "not retried" in error


async def test_a_dependent_reading_a_missing_field_fails_saying_which_fields_there_are(
    env: Env, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda req, i: text('{"title": "Dune", "year": 1965}')
    await env.start_worker()
    author = REVIEW.replace("agent_1_result.title", "agent_1_result.author")
    result = await env.run(plan(BOOK, author), options=RunOptions(max_auto_replans=0))
    agents = {a.id: a for a in result.agents}
    assert agents["1"].status == "completed" and agents["2"].status == "failed"
    assert (
        "{{agent_1_result.author}}: the result has no field 'author' (its fields: title, year)"
        in (agents["2"].error or "")
    )
    assert len(fake_llm.requests) == 1  # agent 2 never reached the model
