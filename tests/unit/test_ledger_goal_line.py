"""`ledger`'s goal check line: a run that ended without a check is not "not done"."""

from __future__ import annotations

from cli.ledger_cmd import goal_check_line


def test_an_ended_run_without_a_goal_check_says_it_ended():
    # walk9: a failed run's ledger said "goal check: not yet (the run is not done)"
    assert goal_check_line(None, "failed") == (
        "not checked: the run ended (failed) before the leader checked its goal"
    )
    assert goal_check_line(None, "running") == "not yet (the run is not done)"
    assert goal_check_line("met (leader): fine", "completed") == "met (leader): fine"
