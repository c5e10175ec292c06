"""Each boundary pattern from a real record shape: the fields Claude Code 2.1.x writes (a
public session's records — ``promptId``, ``origin: {kind}``, ``queue-operation`` enqueue with
``content`` then a bare ``dequeue``, ``queued_command`` attachments with ``commandMode``) and
Codex's ``turn_aborted``; the texts are this file's own. Machine text is recognised by its
markers and counted by kind; the person's queued prompts keep their places; a correction is
read by its relation to the request; a new goal typed after an interrupt starts a task."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from xsky.skills.atoms import keywords
from xsky.skills.drafts import group_offline
from xsky.skills.followups import classify
from xsky.skills.trajectory import Event, Unit, render
from xsky.skills.transcripts import NOT_INTENT, FileInfo, ParseState, adapter_for

SESSION = "5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
MAIN = f"/h/.claude/projects/-home-dev-app/{SESSION}.jsonl"


class Records:
    """Lines in Claude Code 2.1.x's shapes, chained by parentUuid."""

    def __init__(self, sidechain: bool = False) -> None:
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.n = 0
        self.sidechain = sidechain

    def _base(self, kind: str, **kw: Any) -> dict[str, Any]:
        self.n += 1
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{SESSION}#{self.n}"))
        rec = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "type": kind,
            **kw,
            "uuid": uid,
            "timestamp": f"2026-08-10T06:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
            "userType": "external",
            "entrypoint": "cli",
            "cwd": "/home/dev/app",
            "sessionId": SESSION,
            "version": "2.1.226",
            "gitBranch": "main",
        }
        self.parent = uid
        self.lines.append(rec)
        return rec

    def prompt(self, text: str, origin: str | None = "human") -> None:
        extra: dict[str, Any] = {"promptId": str(uuid.uuid4())}
        if origin is not None:
            extra["origin"] = {"kind": origin}
        self._base("user", message={"role": "user", "content": text}, **extra)

    def said(self, text: str) -> None:
        self._base(
            "assistant",
            message={
                "model": "claude-opus-4-1",
                "id": f"msg_{self.n:04d}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
            },
            requestId=f"req_{self.n:04d}",
        )

    def ran(self, command: str, result: str) -> None:
        call = f"toolu_{self.n:04d}"
        self._base(
            "assistant",
            message={
                "model": "claude-opus-4-1",
                "id": f"msg_{self.n:04d}",
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}
                ],
            },
            requestId=f"req_{self.n:04d}",
        )
        self._base(
            "user",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "content": result, "tool_use_id": call}],
            },
        )

    def queue(self, operation: str, content: str | None = None) -> None:
        rec: dict[str, Any] = {
            "type": "queue-operation",
            "operation": operation,
            "timestamp": "2026-08-10T06:30:00.000Z",
            "sessionId": SESSION,
        }
        if content is not None:
            rec["content"] = content
        self.lines.append(rec)

    def queued_command(self, prompt: str, mode: str, origin: str | None) -> None:
        attachment: dict[str, Any] = {
            "type": "queued_command",
            "prompt": prompt,
            "commandMode": mode,
        }
        if origin is not None:
            attachment["origin"] = {"kind": origin}
        self._base("attachment", attachment=attachment)

    def data(self) -> bytes:
        return "".join(json.dumps(r) + "\n" for r in self.lines).encode()


def parse(
    recs: Records, path: str = MAIN, subagent: bool = False
) -> tuple[list[Event], ParseState]:
    state = ParseState()
    events = adapter_for("claude-code").parse(recs.data(), 0, state, FileInfo(path, subagent))
    return events, state


def users(events: list[Event]) -> list[tuple[str | None, str]]:
    return [(e.origin, e.text) for e in events if e.kind == "user"]


def not_intent(state: ParseState) -> dict[str, int]:
    prefix = NOT_INTENT + "/"
    return {k[len(prefix) :]: v for k, v in state.interpreted.items() if k.startswith(prefix)}


def units_of(events: list[Event]) -> list[Unit]:
    return render(events, 0).units


NOTIFICATION = (
    "<task-notification>\n<task-id>b7f2</task-id>\n<tool-use-id>toolu_01</tool-use-id>\n"
    "<status>completed</status>\n<summary>Background command finished</summary>\n</task-notification>"
)


def test_a_queued_task_notification_is_machine_text_and_the_persons_prompt_keeps_its_place() -> (
    None
):
    r = Records()
    r.prompt("run the slow integration suite in the background and fix what fails")
    r.ran("pytest tests/integration &", "started")
    r.queue("enqueue", NOTIFICATION)  # Claude Code queues its notification …
    r.queue("enqueue", "check again after the fixture change")  # … and the person's prompt
    r.queue("dequeue")  # the head: the notification
    r.said("The suite finished with 2 failures.")
    r.queue("dequeue")  # then the person's prompt, at its own time
    r.said("Checking again.")
    events, state = parse(r)
    assert users(events) == [
        ("prompt", "run the slow integration suite in the background and fix what fails"),
        ("queued", "check again after the fixture change"),
    ]
    kinds = [e.kind for e in events]
    # delivered after the notification's turn, not in its place
    assert kinds.index("user", 1) > [e.text for e in events].index(
        "The suite finished with 2 failures."
    )
    assert not_intent(state) == {"task-notification": 1}
    assert state.queued == [] and state.queued_kinds == []


def test_queued_command_attachments_are_matched_to_their_kind_by_their_markers() -> None:
    r = Records()
    r.prompt("migrate the settings loader to pydantic")
    r.queue("enqueue", NOTIFICATION)
    r.queue("enqueue", "new beads for the epic were added. tackle them")
    r.queued_command(NOTIFICATION, "task-notification", "task-notification")
    r.queued_command("new beads for the epic were added. tackle them", "prompt", "human")
    r.queued_command("hello from the other session", "prompt", "peer")
    r.queued_command("ls -la", "bash", "human")
    events, state = parse(r)
    assert users(events) == [
        ("prompt", "migrate the settings loader to pydantic"),
        ("queued", "new beads for the epic were added. tackle them"),  # not lost
    ]
    assert not_intent(state) == {"task-notification": 1, "peer": 1, "shell-command": 1}
    assert state.queued == []


def test_a_user_record_whose_origin_is_not_human_is_not_the_persons() -> None:
    r = Records()
    r.prompt("add retries to the uploader")
    r.prompt("<task-notification>done</task-notification>", origin="task-notification")
    r.prompt("a message from another session", origin="peer")
    events, state = parse(r)
    assert users(events) == [("prompt", "add retries to the uploader")]
    assert not_intent(state) == {"task-notification": 1, "peer": 1}


def test_command_output_and_its_caveat_are_counted_as_what_they_are() -> None:
    r = Records()
    r.prompt(
        "Caveat: The messages below were generated by the user while running local commands. "
        "DO NOT respond to these messages.",
        origin=None,
    )
    r.prompt("<command-name>/cost</command-name>\n<command-message>cost</command-message>", None)
    r.prompt("<local-command-stdout>Total cost: $0.42</local-command-stdout>", origin=None)
    r.prompt("now profile the importer")
    events, state = parse(r)
    assert users(events) == [("prompt", "now profile the importer")]
    assert not_intent(state) == {"caveat": 1, "command": 1, "command-output": 1}


def test_a_menu_letter_answers_and_is_counted_never_an_intent() -> None:
    r = Records()
    r.prompt("clean up the flaky tests")
    r.said("Options:\n(a) quarantine them\n(b) fix the fixtures\nWhich one?")
    r.prompt("b")
    events, state = parse(r)
    assert users(events)[1] == ("answer", "b")
    assert not_intent(state) == {"menu-letter": 1}
    (draft,) = group_offline(units_of(events), None)
    assert draft.state.intent_head == "clean up the flaky tests"


def test_a_warm_up_subagent_makes_no_user_turn_and_no_atom() -> None:
    r = Records(sidechain=True)
    r.prompt("Warmup", origin=None)
    r.said("I'm ready to help you search the codebase.")
    path = f"/h/.claude/projects/-home-dev-app/{SESSION}/subagents/agent-a1b2c3d4.jsonl"
    events, state = parse(r, path, subagent=True)
    assert users(events) == []
    assert {e.kind for e in events} == {"meta"}
    assert not_intent(state) == {"warm-up": 2}  # its turn and its reply
    assert not any(d.has_content() for d in group_offline(units_of(events), None))


def test_a_compaction_subagent_writes_no_intent_no_prompt_analysis_atom() -> None:
    r = Records(sidechain=True)
    r.prompt(
        "Your task is to create a detailed summary of the conversation so far, paying close "
        "attention to the user's explicit requests.",
        origin=None,
    )
    r.said("<analysis>\nThe user asked for a migration …\n</analysis>\n<summary>…</summary>")
    # an old-style sidechain lane of the main file: the compaction agent's conversation
    events, state = parse(r)
    assert users(events) == []
    assert not [e for e in events if e.kind == "assistant"]
    assert not_intent(state) == {"compaction-prompt": 1, "compaction-agent": 1}
    assert not any(d.has_content() for d in group_offline(units_of(events), None))


def test_a_sidechain_lane_that_gets_a_task_after_a_warm_up_is_the_models_again() -> None:
    r = Records(sidechain=True)
    r.prompt("Warmup", origin=None)
    r.said("Ready.")
    r.prompt("List every call site of load_settings", origin=None)
    r.said("Found 4 call sites.")
    events, _ = parse(r)
    assert users(events) == [("model", "List every call site of load_settings")]
    assert "Found 4 call sites." in [e.text for e in events if e.kind == "assistant"]


def test_a_new_goal_typed_right_after_an_interrupt_starts_a_task() -> None:
    r = Records()
    r.prompt("design how the session analyzer stores its cursors")
    r.ran("ls docs", "[Request interrupted by user for tool use]")
    r.prompt("explore more of current repo", origin="human")
    events, _ = parse(r)
    assert users(events)[1] == ("after_interrupt", "explore more of current repo")
    drafts = group_offline(units_of(events), None)
    assert [d.state.intent_head for d in drafts] == [
        "design how the session analyzer stores its cursors",
        "explore more of current repo",
    ]


def test_a_refinement_right_after_an_interrupt_stays_as_a_correction() -> None:
    r = Records()
    r.prompt("rename the config module to settings")
    r.ran("git mv config.py settings.py", "[Request interrupted by user for tool use]")
    r.prompt("no, keep the old module as a shim")
    events, _ = parse(r)
    (draft,) = group_offline(units_of(events), None)
    assert draft.state.signals.get("corrections") == 1


def test_after_an_interrupt_the_object_a_slash_commands_name_holds_is_no_new_goal() -> None:
    """A real 2.1.38 session (handgemacht-ai/spotter's fixture subagent.jsonl): the person ran
    ``/handgemacht:create-beads <research notes>``, interrupted after the plan, and typed
    "create the beads": the task's words held "create-beads" whole, so "beads" was a new
    object and the rest of the task became an atom of its own."""
    r = Records()
    r.prompt(
        "<command-message>handgemacht:create-beads</command-message>\n"
        "<command-name>/handgemacht:create-beads</command-name>\n"
        "<command-args>websearch how to set up credo, dialyzer and mix_audit</command-args>"
    )
    r.ran("ls docs", "[Request interrupted by user]")
    r.prompt("create the beads", origin="human")
    events, _ = parse(r)
    assert users(events)[1] == ("after_interrupt", "create the beads")
    (draft,) = group_offline(units_of(events), None)
    assert draft.state.intent_head.startswith("/handgemacht:create-beads websearch")
    # a request whose object the task never named still starts one
    assert (
        classify(
            "create the changelog",
            "after_interrupt",
            keywords("/handgemacht:create-beads websearch credo"),
            False,
            True,
        )
        == "new"
    )


def test_asking_whether_the_agent_did_something_is_about_the_task_not_a_new_one() -> None:
    """A real 2.1.39 session (handgemacht-ai/spotter's fixture 258c7280…jsonl) ends with "did
    you push?" after the epic was done: no back reference ("it", "that"), a word the task never
    said, so it was a task of its own (an atom with no work in it)."""
    r = Records()
    r.prompt("Implement spotter-gqc")
    r.ran("mix test", "87 tests, 0 failures")
    r.said("Done: all tasks of the epic are closed and committed.")
    r.prompt("did you push?")
    r.said("Yes, everything is pushed.")
    events, _ = parse(r)
    (draft,) = group_offline(units_of(events), None)
    assert draft.state.intent_head == "Implement spotter-gqc"
    # a question that goes on to ask for new work is not held back by it
    assert (
        classify(
            "did you know staging is down? deploy the hotfix",
            "prompt",
            ["spotter-gqc"],
            True,
            False,
        )
        == "new"
    )


def test_codex_turn_aborted_marks_the_next_prompt_after_interrupt() -> None:
    lines = [
        {"type": "session_meta", "payload": {"id": "0199c0aa-0000-7000-8000-000000000001"}},
        {"type": "event_msg", "payload": {"type": "task_started"}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "bump the sdk"}},
        {"type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}},
        {
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "write the changelog"},
        },
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events = adapter_for("codex").parse(data, 0, ParseState(), FileInfo("/h/rollout-x.jsonl"))
    assert [(e.origin, e.text) for e in events if e.kind == "user"][1] == (
        "after_interrupt",
        "write the changelog",
    )


TASK = keywords("design how we record coding sessions and cut them into tasks, in DESIGN.md")


@pytest.mark.parametrize(
    "prompt",
    [
        "it's bad idea, since the file grows without bound",
        "ir's not jsonl file, it's the sqlite index",  # a typo in the pronoun
        "we don't control claude code process, so a hook is the only way in",
        "it’s good, but the cursor section is too long",  # a typographic apostrophe
        "that's not what the queue does",
        "the tests still fail on the second delta",
        "your summary misses the queue part",  # pointing at the last output
    ],
)
def test_a_correction_is_recognised_by_its_relation_to_the_request(prompt: str) -> None:
    assert classify(prompt, "prompt", TASK, True, False) == "correction"


@pytest.mark.parametrize(
    "prompt",
    [
        "Add a Makefile target that cleans up stale locks",
        "there is a new bead for the epic. tackle it",
        "I need a release checklist for the CLI",
    ],
)
def test_a_statement_that_names_a_new_goal_is_not_a_correction(prompt: str) -> None:
    assert classify(prompt, "prompt", TASK, True, False) == "new"


def test_the_task_said_again_with_more_after_an_interrupt_refines_it() -> None:
    """Stopped mid-way, the person retyped the task with a condition: it became a task of its
    own (its new words outnumbered the shared ones) where it refines the one it stopped."""
    task = keywords("add a Dockerfile for the app so we can run it in prod")
    again = (
        "add a Dockerfile for the app so we can run it in prod — but do NOT bake .env into "
        "the image, read settings from environment variables and use a slim python base"
    )
    assert classify(again, "after_interrupt", task, False, True) == "correction"
    # a goal of its own after an interrupt is still new
    other = "explore more of the current repo and list its services"
    assert classify(other, "after_interrupt", task, False, True) == "new"


def test_a_slash_command_typed_as_the_claude_cli_call_starts_a_task() -> None:
    """A real Claude Code 2.1.177 session (ikihin/bhavana@6961556e, claude-session.jsonl): a
    guide told the person to run ``claude "/competitive-landscape …"`` in a terminal, and they
    typed those lines into the session itself; Claude Code's model ran each named skill. Each
    is a task of its own — after the project brief was answered, and after the person stopped
    one (rejecting its tool calls) to run the next — not a follow-up of the one before."""
    r = Records()
    r.prompt(
        "claude \"I'm building Bhavana — a proof of concept RWA platform on Solana devnet "
        'for a Superteam grant. The idea: fractional Indonesian property investment"'
    )
    r.said("Got it: Bhavana, fractional Indonesian property on Solana devnet.")
    r.prompt(
        'claude "/competitive-landscape Who are my competitors in RWA property tokenization '
        "on Solana? Focus on what they haven't solved yet. I'm building Bhavana\""
    )
    # the person said no to its calls, then typed the next command (as 2.1.177 writes it)
    r.ran(
        "curl -s https://example.com/rwa",
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if "
        "it was a file edit, the new_string was NOT written to the file). STOP what you are "
        "doing and wait for the user to tell you how to proceed.",
    )
    r.prompt("[Request interrupted by user for tool use]", origin=None)
    r.prompt(
        'claude "/roast-my-product Bhavana MVP: a Solana devnet proof of concept for '
        'fractional Indonesian property investment. 3 hardcoded properties"'
    )
    r.said("Roast: ...")
    events, _ = parse(r)
    drafts = group_offline(units_of(events), None)
    heads = [d.state.intent_head for d in drafts]
    assert len(heads) == 3, heads
    assert heads[0].startswith("claude \"I'm building Bhavana")
    assert heads[1].startswith('claude "/competitive-landscape Who')
    assert heads[2].startswith('claude "/roast-my-product Bhavana')
    assert classify("claude '/review-pr 42'", None, keywords("review pr 41"), True, False) == "new"
    # a prompt that only names the CLI, or one of its commands unquoted, stays what its words say
    asked = keywords("why does claude /doctor fail on my settings")
    said = classify("claude /doctor says my settings are fine", None, asked, True, False)
    assert said != "new"
    assert (
        classify("claude is slow here, why?", None, keywords("claude slow"), True, False) != "new"
    )


def test_ok_good_and_a_new_problem_after_an_interrupt_starts_a_task() -> None:
    # A real Codex 0.122.0 rollout (swarnasn29/soulpass@7e1a84ca, codex-session.jsonl, found
    # by real12): the person interrupted the agent while it started a dev server, then typed
    # this (trimmed). It was read as a correction of the employer-page task, which absorbed
    # the treasury, payroll and vault fixes after it: one task of six prompts, scored 1
    employer = keywords(
        "this page http://localhost:3000/employer in Civitas-Sol should be same as /dashboard "
        "page in Civitas same styles look with solana functionalities"
    )
    deposit = (
        "ok good now when i deposit in treasury first of all it says treasury is not "
        "initialized then t.serialize is not a function"
    )
    assert classify(deposit, "after_interrupt", employer, False, True) == "new"
    assert classify(deposit, "prompt", employer, True, False) == "new"
    # an "ok" with a verdict, then a critique or a go-on, stays; "yes good idea" is no verdict
    for stays in (
        "ok good, but the sidebar is still there",
        "okay that works, now keep the same styles on /employer/settings",
        "yes good idea, go ahead",
        "ok good",
    ):
        follow = classify(stays, "after_interrupt", employer, False, True)
        assert follow != "new", stays
    # the new task's intent is the request, not the verdict on the last one
    units, at = [], 0
    for kind, text, origin in (
        ("user", "make /employer the same as /dashboard in Civitas", "prompt"),
        ("assistant", "Reworked /employer to the dashboard layout.", None),
        ("marker", "", None),
        ("user", deposit, "after_interrupt"),
    ):
        marker = "interrupted" if kind == "marker" else None
        units.append(
            Unit(at, at + 10, kind, text, offset=at, end=at + 10, origin=origin, marker=marker)
        )
        at += 10
    drafts = group_offline(units, None)
    assert len(drafts) == 2
    assert drafts[1].state.intent_head is not None
    assert drafts[1].state.intent_head.startswith("when i deposit in treasury")


# Typed after the agent answered with a numbered list of six gaps in a market (a real Claude
# Code 2.1.92 session, Reinhartsamuel/TokenForge claude-session.jsonl @ 43fe06dd; real13):
# each became a task of its own, so one research task was four, the doubt and the narrowing
# each scored as a success apart from the answer they steer.
RWA_TASK = keywords("is there a gap in Solana RWA space, im trying to build a startup on solana")


@pytest.mark.parametrize(
    "prompt,follow",
    [
        (
            "quick: isn't number 4  already covered by pyth network? they have prices for gold,"
            " public stocks, commodities, etc. (answer briefly)",
            "same",
        ),
        (
            "ok now ditch number 5 and 6. I'm really interrested in private credit on solana, but"
            " as a dev also likes unified RWA token standard (number 1). number 3 and 4 also"
            " sounds good. I want you to pull latest articles, research, and social media"
            " discussion about number 1-4 and really dive deep into the nitty gritty of each one.",
            "refinement",
        ),
    ],
)
def test_a_prompt_naming_an_item_of_the_answer_by_its_number_is_about_the_result(
    prompt: str, follow: str
) -> None:
    assert classify(prompt, "prompt", RWA_TASK, True, False) == follow


@pytest.mark.parametrize(
    "prompt",
    [
        "fix issue #42 in the payment webhook handler",  # an issue's number names a goal
        "continue to phase 2: start with the models",  # a plan's next phase (real8)
    ],
)
def test_a_number_that_is_no_item_of_the_answer_still_names_a_goal(prompt: str) -> None:
    assert classify(prompt, "prompt", RWA_TASK, True, False) == "new"
