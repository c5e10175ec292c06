"""Two requests behind one pasted preamble are two tasks (real11).

The task rules read a prompt's first 400 characters, so a fixed preamble the person pastes
before each request (rules, a project brief) made every prompt look alike: the next request
was read as the same ask again (a re-ask, which also lowers the score) and joined the task
before it. They now read past the lines a prompt repeats from the prompt before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from xsky.skills.atom_finish import DeltaView, finish
from xsky.skills.drafts import group_offline
from xsky.skills.trajectory import HEAD_CHARS, Unit

# Trimmed from a real Codex 0.125.0 rollout: Krosss0001/rave-era-project@c332b1a7,
# codex-session.jsonl (https://github.com/Krosss0001/rave-era-project), prompts 4 and 5 —
# two spec prompts written to one template (the header and the rules repeat).
RULE = "-" * 50
REGISTRATION = f"""We are implementing the next core feature:

EVENT REGISTRATION SYSTEM

IMPORTANT:
- do NOT break UI
- do NOT remove current pages
- do NOT expose service role key
- do NOT start dev server

{RULE}
GOAL:

Users can register for an event.

{RULE}
PHASE 1  REGISTER BUTTON
{RULE}

In /events/slug:

Add button:

"Register"

{RULE}
PHASE 2  REGISTRATION FORM
{RULE}

On click:

Show form:

- name
- email (prefilled if logged in)
- telegram username

{RULE}
PHASE 3  SAVE TO SUPABASE
{RULE}

Insert into:

registrations table:

- event_id
- user_id
- respect RLS

{RULE}
OUTPUT:

1. What was added
2. Files changed
3. How to test registration
"""
TICKETS = f"""We are implementing the next core layer:

TICKET SYSTEM (post-registration)

IMPORTANT:
- do NOT break UI
- do NOT remove current features
- do NOT expose service role key
- do NOT start dev server

{RULE}
GOAL:

After registration, create a ticket and show it to the user.

{RULE}
PHASE 1  CREATE TICKET AFTER REGISTRATION
{RULE}

After successful insert into "registrations":

- create a new row in "tickets"

Fields:

- registration_id
- event_id
- user_id
- ticket_code (unique)
- qr_payload (string)
- status = "reserved"

{RULE}
PHASE 2  GENERATE TICKET CODE
{RULE}

Create helper:

generateTicketCode()

- respect RLS

{RULE}
OUTPUT:

1. What was added
2. Files changed
3. How to test tickets
"""

# A fixed preamble longer than the 400 characters the rules read, before each request.
PREAMBLE = (
    "You are working in the acme-billing monorepo. Rules for every change:\n"
    "- keep the public API of packages/core stable; add, never rename\n"
    "- every change comes with unit tests under tests/unit, run with pytest -q\n"
    "- format with ruff format and keep ruff check clean, line length 100\n"
    "- never commit secrets, .env files or generated artefacts\n"
    "- write commit messages in the imperative mood, one topic per commit\n"
    "- when unsure about product behaviour, ask before you change it\n"
    "- do not touch the deployment manifests under deploy/ without asking\n"
    "\nRequest:\n"
)
assert len(PREAMBLE) > HEAD_CHARS


def units(*prompts_and_answers: tuple[str, str]) -> list[Unit]:
    out, at = [], 0
    for kind, text in prompts_and_answers:
        out.append(
            Unit(s=at, e=at + len(text), kind=kind, head=text, offset=at, end=at + len(text))
        )
        at += len(text)
    return out


def atoms(us: list[Unit], cuts: Sequence[int] = ()) -> list[dict]:
    """The atoms of ``us`` read in deltas cut at ``cuts``, each once (its last version)."""
    md = "." * us[-1].e
    view = DeltaView("traj_t", "/raw.jsonl", md, 0, 0, len(md), session="s1")
    out: dict[str, dict] = {}
    prior, number, start = None, 1, 0
    for end in [*cuts, len(us)]:
        for a in finish(group_offline(us[start:end], prior), view, number, "offline"):
            out[a.atom_id] = a.model_dump(mode="json", exclude={"provenance": {"deltas"}})
        prior = a
        number, start = int(a.atom_id[-4:]) + 1, end
    return list(out.values())


def test_a_long_pasted_preamble_does_not_make_the_next_request_a_reask() -> None:
    us = units(
        ("user", PREAMBLE + "Add a CSV export of invoices to the billing dashboard."),
        ("assistant", "Added the CSV export with tests."),
        ("user", PREAMBLE + "Fix the rounding of tax amounts in the PDF receipts."),
        ("assistant", "Fixed the rounding."),
    )
    whole = atoms(us, [])
    assert len(whole) == 2
    assert whole[1]["intent"] == "Fix the rounding of tax amounts in the PDF receipts."
    assert "re_asks" not in whole[0]["provenance"]["ux_signals"]
    for cuts in ([1], [2], [3], [1, 2, 3]):  # the same atoms whatever the window edges
        assert atoms(us, cuts) == whole, cuts


def test_two_real_spec_prompts_of_one_template_are_two_tasks() -> None:
    us = units(
        ("user", REGISTRATION),
        ("assistant", "Added event registration on /events/[slug]."),
        ("user", TICKETS),
        ("assistant", "Implemented the post-registration ticket system."),
    )
    got = atoms(us, [])
    assert [a["intent"].split(":")[1].split()[0] for a in got] == ["EVENT", "TICKET"]
    assert all(a["provenance"]["ux_signals"] == {} for a in got)  # no re-ask


def test_the_same_ask_again_and_a_short_reply_are_read_as_they_are() -> None:
    # a prompt pasted again whole is still a re-ask; one repeating little is read whole
    from xsky.skills.followups import own_part

    assert own_part(REGISTRATION, REGISTRATION) == REGISTRATION.strip()[:HEAD_CHARS]
    assert own_part("- do NOT break UI please", REGISTRATION) == "- do NOT break UI please"
    us = units(
        ("user", PREAMBLE + "Add a CSV export of invoices to the billing dashboard."),
        ("assistant", "Added."),
        ("user", PREAMBLE + "Add a CSV export of invoices to the billing dashboard."),
        ("assistant", "Added again."),
    )
    (one,) = atoms(us, [])
    assert one["provenance"]["ux_signals"].get("re_asks") == 1


def test_the_first_request_behind_a_preamble_is_read_past_it_once_the_next_repeats_it() -> None:
    # (real12) a preamble is only seen to be one when the next prompt repeats it: the first
    # request behind it — a session's first prompt — kept the preamble as its intent, summary
    # and tags, whether the next prompt came in the same delta or a later one
    us = units(
        ("user", PREAMBLE + "Add a CSV export of invoices to the billing dashboard."),
        ("assistant", "Added the CSV export with tests."),
        ("user", PREAMBLE + "Fix the rounding of tax amounts in the PDF receipts."),
        ("assistant", "Fixed the rounding."),
    )
    whole = atoms(us, [])
    assert [a["intent"] for a in whole] == [
        "Add a CSV export of invoices to the billing dashboard.",
        "Fix the rounding of tax amounts in the PDF receipts.",
    ]
    assert whole[0]["summary"].startswith("Asked: Add a CSV export")
    assert "monorepo" not in whole[0]["tags"] and "invoices" in whole[0]["tags"]
    for cuts in ([1], [2], [3], [1, 2, 3]):
        assert atoms(us, cuts) == whole, cuts
    # a follow-up of the same task that repeats the preamble says the same of the first prompt
    us = units(
        ("user", PREAMBLE + "Add a CSV export of invoices to the billing dashboard."),
        ("assistant", "Added the CSV export."),
        ("user", PREAMBLE + "Also add the tax column to it."),
        ("assistant", "Added the tax column."),
    )
    (one,) = atoms(us, [])
    assert one["intent"] == "Add a CSV export of invoices to the billing dashboard."
    assert atoms(us, [2]) == [one]
    # a prompt that shares nothing with the next keeps its intent; the same ask again too
    alone = units(
        ("user", PREAMBLE + "Add a CSV export of invoices to the billing dashboard."),
        ("assistant", "Added."),
        ("user", "Now write the release notes for version 2.3 of the dashboard."),
        ("assistant", "Written."),
    )
    assert atoms(alone, [])[0]["intent"].startswith("You are working in the acme-billing")


def test_a_real_template_prompt_loses_the_rules_it_shares_with_the_next() -> None:
    us = units(
        ("user", REGISTRATION),
        ("assistant", "Added event registration on /events/[slug]."),
        ("user", TICKETS),
        ("assistant", "Implemented the post-registration ticket system."),
    )
    first = atoms(us, [])[0]
    assert "EVENT REGISTRATION SYSTEM" in first["intent"]
    assert "do NOT break UI" not in first["intent"]  # a rule both prompts carry
    assert atoms(us, [2]) == atoms(us, [])
