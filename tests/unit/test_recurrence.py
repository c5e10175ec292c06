"""Recurring work: the same kind of task across sessions founds one candidate skill, an
unrelated pair that shares words does not, and the worth bar keeps the measured recurring
workflow (each of its atoms worth 6)."""

from __future__ import annotations

from xsky.skills.atoms import AtomTask, Provenance, RawAnchor, SplitState
from xsky.skills.clustering import NEW_SKILL_MIN, offline_decide, worth
from xsky.skills.evidence import Seed, project_of, session_of
from xsky.skills.recurrence import kind_similarity, request_words, same_kind, shape_of


def atom(n: int, intent: str, tools: dict[str, int], errors: int = 4) -> AtomTask:
    traj = f"traj_cc_tracker_{n:08d}"
    calls = sum(tools.values())
    return AtomTask(
        atom_id=f"atom_{traj}_0001",
        traj_id=traj,
        offset_start=0,
        offset_end=100,
        intent=intent,
        summary="",
        ux_score=7,
        provenance=Provenance(
            raw=[
                RawAnchor(
                    path="/r", byte_start=0, byte_end=1, call_ids=[str(i) for i in range(calls)]
                )
            ],
            ux_signals={"tool_errors": errors},
            split=SplitState(tools=tools),
            ended="completed",
        ),
    )


BEAD = "Work on bead {b}: {t}. Read the bead with bd show, implement it, run the tests, commit and close it."
STEPS = {"Bash": 9, "Read": 1, "Edit": 1}
beads = [
    atom(i, BEAD.format(b=b, t=t), STEPS)
    for i, (b, t) in enumerate(
        [
            ("xsky-12", "retry uploads"),
            ("xsky-31", "queue depth"),
            ("xsky-40", "drop the reader"),
            ("xsky-57", "cap logs"),
        ]
    )
]


def seed(a: AtomTask) -> Seed:
    return Seed(
        atom_id=a.atom_id,
        traj_id=a.traj_id,
        session=session_of(a),
        project=project_of(a.traj_id),
        weightscore=worth(a),
        shape=shape_of(a),
    )


def test_a_requests_particulars_are_not_its_kind():
    assert request_words("Work on bead xsky-12 in src/uploader.py, issue 4411") == ["bead", "issue"]


def test_work_on_bead_sessions_are_one_kind_of_task_and_each_is_kept_as_evidence():
    assert [worth(a) for a in beads] == [6] * 4 and NEW_SKILL_MIN <= 6
    shapes = [shape_of(a) for a in beads]
    assert all(same_kind(a, b) for a in shapes for b in shapes)
    first = offline_decide(beads[0], [], [])
    assert first.action == "seed" and "another session" in first.reason
    second = offline_decide(beads[1], [], [seed(beads[0])])
    assert second.action == "new" and second.founders == [beads[0].atom_id]
    assert "2 sessions" in second.reason


def test_an_unrelated_pair_that_shares_words_founds_nothing():
    logs = atom(
        10,
        "Analyze the agent sessions: find which sessions failed and why, and write a report.",
        {"Bash": 4},
    )
    web = atom(
        11,
        "Analyze the sessions table: find why sessions expire early and fix it.",
        {"Grep": 1, "Read": 2, "Edit": 1},
    )
    assert not same_kind(shape_of(logs), shape_of(web))
    assert kind_similarity(shape_of(logs), shape_of(web)) < kind_similarity(
        shape_of(beads[0]), shape_of(beads[1])
    )
    assert offline_decide(web, [], [seed(logs)]).action == "seed"


def test_the_same_words_with_other_steps_are_another_kind():
    talked = atom(20, beads[0].intent, {})  # answered in words: no tool call
    assert not same_kind(shape_of(talked), shape_of(beads[1]))


def test_a_request_cut_to_its_first_sentence_is_still_the_same_kind_in_any_order():
    """An intent keeps whole sentences up to 160 characters: a bead with a long title keeps only
    its opening. It is the same kind as the full ones whichever arrives first (measured: against
    the whole set of words it shared 0.13-0.15 and was left a seed when it came after the skill)."""
    cut = atom(9, "Work on bead xsky-31: show the queue depth in the status page.", STEPS)
    full = [
        atom(i, BEAD.format(b=b, t=t), STEPS)
        for i, (b, t) in enumerate(
            [
                ("xsky-57", "cap the log files at 10 MB"),
                ("xsky-40", "drop the legacy config reader"),
            ]
        )
    ]
    for other in full:
        assert same_kind(shape_of(cut), shape_of(other)) and same_kind(
            shape_of(other), shape_of(cut)
        )
    founded = offline_decide(full[1], [], [seed(full[0])])
    assert founded.action == "new", founded
