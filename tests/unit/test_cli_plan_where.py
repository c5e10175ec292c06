"""`starter.py plan "…"` without --run plans on this machine, with the CLI's settings: it says so,
and that `--run` plans on the workers with their model (walk9: a CLI without a model planned
offline while the workers had one, in silence)."""

from __future__ import annotations

from cli.plan_cmd import planned_where


def test_a_printed_plan_says_it_was_planned_here_and_where_a_run_would_plan():
    offline = planned_where("offline", 1)
    assert "offline provider on this machine" in offline and "no model is set" in offline
    assert "`--run` plans with theirs" in offline
    model = planned_where("gpt-x", 2)
    assert "planned by gpt-x on this machine" in model and "on the workers" in model
    assert "2 attempt(s)" in model
