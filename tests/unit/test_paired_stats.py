"""The paired test's statistics: win rate, mean difference and its 95 % t-interval, the
verdict that gates promotion, the held-out atoms, and the score kinds' labels."""

from __future__ import annotations

import pytest

from xsky.skills.paired import Trial, first_shown, hold_out, kind_label, not_run, summarise, tasks


def trials(pairs: list[tuple[int, int]]) -> list[Trial]:
    return [Trial(task="a", shown_first="with", with_score=w, baseline_score=b) for w, b in pairs]


def test_a_consistent_gain_beats_the_baseline_with_its_interval():
    r = summarise(trials([(8, 5), (9, 5), (7, 5)]), "abc", "no skill", "m", ["a"])
    assert r.verdict == "better" and r.passed
    assert r.win_rate == 1.0 and r.mean_difference == 3.0
    # mean 3, sd 1, n 3: 3 ± 4.303 / sqrt(3)
    assert r.ci_low == pytest.approx(0.516, abs=1e-3) and r.ci_high == pytest.approx(
        5.484, abs=1e-3
    )
    assert "model-judged" in r.line() and "95% t-interval" in r.line()


def test_a_mixed_result_shows_no_difference_and_does_not_pass():
    r = summarise(trials([(8, 5), (5, 7), (6, 6)]), "abc", "main 123", "m", ["a"])
    assert r.verdict == "no difference shown" and not r.passed and r.win_rate == 0.5


def test_a_worse_version_is_worse():
    assert summarise(trials([(3, 7), (4, 7), (2, 7)]), "v", "main 1", "m", []).verdict == "worse"


def test_fewer_than_three_trials_never_pass():
    r = summarise(trials([(9, 1), (9, 1)]), "v", "no skill", "m", [])
    assert r.verdict == "not run" and not r.passed and "at least 3" in r.reason
    assert not not_run("v", "no skill", "no model is configured").passed


def test_held_out_atoms_are_a_stable_quarter_and_never_all():
    ids = [f"atom_t_{i:04d}" for i in range(8)]
    written, held = hold_out(ids)
    assert len(held) == 2 and set(written) | set(held) == set(ids) and not set(written) & set(held)
    assert hold_out(list(reversed(ids)))[1] == sorted(held, reverse=True)
    assert hold_out(["only"]) == (["only"], [])
    assert tasks(held) == [held[0], held[1], held[0]]


def test_the_order_a_comparator_sees_varies_by_trial_and_is_the_same_on_a_retry():
    orders = [first_shown("abc", i) for i in range(16)]
    assert set(orders) == {"with", "baseline"} and orders == [
        first_shown("abc", i) for i in range(16)
    ]


def test_score_kinds_are_labelled():
    assert kind_label(["heuristic"] * 3) == "heuristic"
    assert (
        kind_label(["heuristic", "model-judged", "heuristic"])
        == "mixed: 2 heuristic, 1 model-judged"
    )
    assert kind_label([]) == "no scores"
