"""The offline splitter's rules and the UX heuristic, on hand-made units."""

from __future__ import annotations

import pytest

from xsky.skills.atom_finish import DeltaView, finish, heuristic_ux, signals
from xsky.skills.atoms import windows
from xsky.skills.drafts import group_offline
from xsky.skills.trajectory import Unit


def units(*items: tuple[str, str] | tuple[str, str, dict]) -> list[Unit]:
    out, at = [], 0
    for item in items:
        kind, head = item[0], item[1]
        extra = item[2] if len(item) > 2 else {}  # type: ignore[misc]
        size = max(len(head), 10)
        out.append(Unit(s=at, e=at + size, kind=kind, head=head, offset=at, end=at + size, **extra))  # type: ignore[arg-type]
        at += size
    return out


def starts(us: list[Unit]) -> list[str]:
    return [d.units[0].head for d in group_offline(us, None)]


def test_a_correction_an_acknowledgement_and_a_go_ahead_stay_in_the_task() -> None:
    us = units(
        ("user", "fix the cart rounding test"),
        ("assistant", "Fixed with round()."),
        ("user", "no, use Decimal instead"),
        ("assistant", "Done with Decimal."),
        ("user", "thanks, looks good"),
        ("user", "ok go ahead and commit it"),
    )
    assert starts(us) == ["fix the cart rounding test"]


def test_a_new_ask_is_a_new_atom_and_a_compaction_goes_with_what_follows_it() -> None:
    us = units(
        ("user", "fix the cart rounding test"),
        ("assistant", "Done."),
        ("user", "now add a Dockerfile for production"),
        ("tool_call", "Write Dockerfile"),
        ("compaction", "summary of what happened"),
        ("user", "continue"),  # inside the Dockerfile task: the compaction stays in it
        ("assistant", "Dockerfile written."),
        ("marker", "", {"marker": "compaction"}),
        ("compaction", "summary of the Dockerfile work"),
        ("user", "Write the README section about deployment"),  # a new goal: it takes them
    )
    drafts = group_offline(us, None)
    assert [d.units[0].head for d in drafts] == [
        "fix the cart rounding test",
        "now add a Dockerfile for production",
        "",  # the compaction marker opens the README task
    ]
    assert [u.kind for u in drafts[2].units] == ["marker", "compaction", "user"]
    assert drafts[1].units[-1].head == "Dockerfile written."


def test_an_ask_repeated_after_an_interruption_is_the_same_task() -> None:
    us = units(
        ("user", "explain the query plan for the order history query"),
        ("marker", "", {"marker": "aborted"}),
        ("user", "sorry - explain the query plan for this query: SELECT id FROM orders"),
    )
    drafts = group_offline(us, None)
    assert len(drafts) == 1
    assert signals(drafts[0].units) == {"interrupted": 1}


def test_work_the_person_rewound_past_is_its_own_abandoned_task_and_the_retry_starts_anew() -> None:
    # An edited prompt (a rewind): its words refine the first, yet what the agent did for the
    # first was undone — not a success to learn from, and not part of the retry's task.
    us = units(
        ("user", "fix the rounding of invoice totals with banker's rounding"),
        ("tool_call", "Edit invoice.py"),
        ("assistant", "Done: ROUND_HALF_EVEN."),
        ("marker", "continues from earlier message u0", {"marker": "branch"}),
        ("user", "fix the rounding of invoice totals with banker's rounding, in one helper"),
        ("assistant", "Added money.py with the helper."),
    )
    first, retry = group_offline(us, None)
    assert retry.units[0].head.endswith("in one helper")
    assert signals(first.units) == {"rewound": 1}
    assert heuristic_ux(dict(signals(first.units))) <= 2  # the rubric's "abandoned"
    assert first.state.rewound and not first.completed
    assert not retry.state.rewound and retry.completed


def test_mid_task_additions_stay_unless_the_topic_changes() -> None:
    us = units(
        ("user", "migrate the orders table to add a status column"),
        ("tool_call", "ls migrations"),
        ("user", "also backfill existing orders status column"),
        ("tool_call", "psql"),
        ("user", "unrelated: what is the weather api rate limit in the docs"),
    )
    assert len(group_offline(us, None)) == 2


@pytest.mark.parametrize(
    ("sig", "score"),
    [
        ({}, 9),
        ({"completed": 1}, 10),
        ({"tool_errors": 1, "completed": 1}, 10),
        ({"tool_errors": 3}, 8),
        ({"corrections": 1}, 7),
        ({"corrections": 2, "re_asks": 1}, 4),
        ({"interrupted": 1, "re_asks": 1}, 6),
        ({"reverted_edits": 1, "corrections": 3, "interrupted": 2}, 1),
    ],
)
def test_the_ux_heuristic_follows_the_rubric(sig: dict, score: int) -> None:
    assert heuristic_ux(sig) == score


def test_signals_count_what_the_person_had_to_do() -> None:
    us = units(
        ("user", "deploy the api to staging"),
        ("tool_call", "kubectl apply"),
        ("tool_result", "boom", {"error": True}),
        ("tool_call", "git reset --hard HEAD~1"),
        ("user", "no, wrong cluster"),
        ("marker", "", {"marker": "interrupted"}),
        ("marker", "", {"marker": "task_complete"}),
    )
    assert signals(us) == {
        "tool_errors": 1,
        "reverted_edits": 1,
        "corrections": 1,
        "interrupted": 1,
        "completed": 1,
    }


def test_windows_respect_the_cap_and_prefer_to_cut_before_a_prompt() -> None:
    us = units(*[("user" if i % 5 == 0 else "tool_result", f"{'x' * 4000} {i}") for i in range(40)])
    ws = windows(us, cap=30_000)
    assert all(w[-1].e - w[0].s <= 30_000 for w in ws)
    assert all(w[0].kind == "user" for w in ws)
    assert sum(len(w) for w in ws) == len(us)


def test_finish_numbers_links_and_tiles_and_measures_skills() -> None:
    us = units(
        ("user", "extract the pdf text"),
        ("tool_call", "Skill pdf-extract", {"skill": "pdf-extract"}),
        ("assistant", "Done."),
        ("user", "now summarise the changelog"),
        ("assistant", "Summary: …"),
    )
    md = "".join("." * (u.e - u.s) for u in us)
    view = DeltaView("traj_cc_x_1", "/raw.jsonl", md, 0, 0, 999)
    atoms = finish(group_offline(us, None), view, 1, "offline")
    assert [a.atom_id for a in atoms] == ["atom_traj_cc_x_1_0001", "atom_traj_cc_x_1_0002"]
    assert atoms[0].post_atom_id == atoms[1].atom_id and atoms[1].pre_atom_id == atoms[0].atom_id
    assert (atoms[0].offset_start, atoms[0].offset_end, atoms[1].offset_end) == (
        0,
        us[3].s,
        len(md),
    )
    assert (
        atoms[0].used_skills == ["pdf-extract"] and atoms[0].provenance.used_skills_by == "measured"
    )
    assert atoms[1].used_skills == [] and atoms[1].provenance.used_skills_by == "none"
    assert atoms[0].provenance.raw[0].byte_start == 0
