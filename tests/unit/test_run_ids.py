"""A run's default id: short, readable, named for the plan, valid as a run id, new each time."""

from __future__ import annotations

from client._consts import RUN_ID
from xsky.plan.xml import parse_workflow
from xsky.run_ids import default_run_id, slug


def test_a_plan_with_a_task_id_is_named_for_it():
    assert default_run_id("example-chain", "Count words", "a1b2c3") == "xsky-example-chain-a1b2c3"
    assert default_run_id("xsky-nightly", None, "a1b2c3") == "xsky-nightly-a1b2c3"


def test_a_plan_without_a_task_id_is_named_for_its_name_not_the_uuid_the_parser_gave_it():
    wf = parse_workflow(
        '<workflow name="Count the words of a generated note!"><agent name="llm" id="1"><task>t</task></agent></workflow>'
    )
    run_id = default_run_id(wf.task_id, wf.name, "0f9e8d")
    assert run_id == "xsky-count-the-words-of-a-generated-0f9e8d"
    assert len(run_id) <= 44 and RUN_ID.fullmatch(run_id)


def test_names_become_ascii_words_cut_at_a_word_and_never_empty():
    assert slug("Résumé: café — ünïcode") == "resume-cafe-unicode"
    assert slug("a" * 40) == "a" * 32
    assert slug("summarise the release notes of the week") == "summarise-the-release-notes-of"
    assert default_run_id(None, "日本語のタスク", "abcdef") == "xsky-run-abcdef"
    assert default_run_id("  ", "", "abcdef") == "xsky-run-abcdef"


def test_every_start_draws_a_new_valid_id():
    ids = {default_run_id("t", "n") for _ in range(200)}
    assert len(ids) == 200 and all(
        RUN_ID.fullmatch(i) and len(i) == len("xsky-t-") + 6 for i in ids
    )
