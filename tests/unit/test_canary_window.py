"""The export canary's plan (which side a window shows) and its record (which side was installed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from xsky.skills import canary_window as cw

T0 = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)


def test_windows_are_six_hours_aligned_on_utc_midnight() -> None:
    w = cw.window_of(T0)
    assert cw.window_of(T0 + timedelta(hours=5, minutes=59, seconds=59)) == w
    assert cw.window_of(T0 + timedelta(hours=6)) == w + 1
    assert cw.window_start(w) == T0
    # the same moment in another time zone is the same window
    assert cw.window_of((T0 + timedelta(hours=7)).astimezone()) == w + 1


def test_the_plan_is_sticky_reproducible_and_close_to_half_staging() -> None:
    sides = [cw.planned_side("deploy-helm", "c0ffee", i) for i in range(4000)]
    again = [cw.planned_side("deploy-helm", "c0ffee", i) for i in range(4000)]
    assert sides == again
    share = sides.count("staging") / len(sides)
    assert 0.46 < share < 0.54, share
    # a new staging version draws a fresh sequence, and so does another skill
    assert sides != [cw.planned_side("deploy-helm", "beef00", i) for i in range(4000)]
    assert sides != [cw.planned_side("other-skill", "c0ffee", i) for i in range(4000)]
    # not the same hours every day: each of the 4 windows of a day shows staging on some
    # days and main on others
    for slot in range(4):
        daily = {sides[day * 4 + slot] for day in range(60)}
        assert daily == {"main", "staging"}, slot


def test_next_switch_is_the_start_of_the_first_window_with_the_other_side() -> None:
    now = T0 + timedelta(hours=1)
    nxt = cw.next_switch("deploy-helm", "c0ffee", now)
    assert nxt is not None and nxt > now and nxt == cw.window_start(cw.window_of(nxt))
    here = cw.planned_side("deploy-helm", "c0ffee", cw.window_of(now))
    assert cw.planned_side("deploy-helm", "c0ffee", cw.window_of(nxt)) != here
    for i in range(cw.window_of(now), cw.window_of(nxt)):
        assert cw.planned_side("deploy-helm", "c0ffee", i) == here


def _switch(hours: float, side: cw.Side, commit: str, to: str = "/d/x") -> cw.Switch:
    at = (T0 + timedelta(hours=hours)).isoformat(timespec="milliseconds")
    return cw.Switch(at=at, side=side, commit=commit, to=to)


def test_the_switch_in_force_is_the_last_one_at_or_before_the_moment() -> None:
    log = [_switch(0, "main", "m1"), _switch(6, "staging", "s1"), _switch(12, "main", "m1")]
    assert cw.installed_at(log, T0 - timedelta(seconds=1)) is None
    assert cw.installed_at(log, T0).commit == "m1"  # type: ignore[union-attr]
    assert cw.installed_at(log, T0 + timedelta(hours=7)).side == "staging"  # type: ignore[union-attr]
    assert cw.installed_at(log, T0 + timedelta(hours=12)).side == "main"  # type: ignore[union-attr]
    assert cw.canary_started(log, "s1") == T0 + timedelta(hours=6)
    assert cw.canary_started(log, "s2") is None


def test_the_log_survives_torn_and_foreign_lines() -> None:
    good = _switch(0, "staging", "s1").line() + _switch(6, "main", "m1", to="/d/y").line()
    text = good + '{"at": "2026-11-02T13:00:00Z", "side": "staging", "com' + "\n"
    text += '{"at": "not a time", "side": "main", "commit": "m1"}\n[1, 2]\n'
    log = cw.parse_switches(text)
    assert [(s.side, s.commit) for s in log] == [("staging", "s1"), ("main", "m1")]
    assert cw.last_for(log, "/d/y").commit == "m1"  # type: ignore[union-attr]
    assert cw.last_for(log, "/d/z") is None


def test_transcript_times_parse_with_z_and_naive_times_are_utc() -> None:
    assert cw.parse_time("2026-11-02T06:00:00.123Z") == T0 + timedelta(hours=6, milliseconds=123)
    assert cw.parse_time("2026-11-02T06:00:00") == T0 + timedelta(hours=6)
