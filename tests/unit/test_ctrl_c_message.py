"""What Ctrl-C says names the run that goes on, and none when none was started (walk6:
`run --id X` stopped while it waited for a worker said "the run goes on: re-attach with
`starter.py follow X`" — `follow X` then said there was no such run — and `fork --follow`
named the run forked, not the fork)."""

from __future__ import annotations

import argparse

from cli.main import _interrupted


def test_a_run_stopped_before_it_started_is_not_said_to_go_on():
    said = _interrupted(argparse.Namespace(command="run", id="walk6-x", follow=True))
    assert "before the run was started" in said and "follow walk6-x" not in said
    started = argparse.Namespace(command="run", id="walk6-x", follow=True, started="walk6-x")
    assert _interrupted(started).endswith("re-attach with `starter.py follow walk6-x`")


def test_a_fork_names_the_fork_not_the_run_it_forked():
    forking = argparse.Namespace(command="fork", id="walk6-main", task="T-2", follow=True)
    assert "walk6-main" not in _interrupted(forking)
    forking.started = "walk6-main-fork-abc123"
    said = _interrupted(forking)
    assert said.endswith("`starter.py follow walk6-main-fork-abc123`"), said


def test_following_a_run_still_says_how_to_re_attach():
    said = _interrupted(argparse.Namespace(command="follow", id="walk6-x"))
    assert said.endswith("re-attach with `starter.py follow walk6-x`")


def test_a_run_stopped_as_it_was_started_is_named():
    """Ctrl-C once the start was sent — while the CLI waited for a worker to take the run's
    first task — said only "nothing goes on unless `starter.py list` shows it", and the run
    went on unnamed (walk10): the id being started is named, with how to re-attach or stop it."""
    starting = argparse.Namespace(command="run", id=None, follow=True, starting="xsky-slow-294835")
    said = _interrupted(starting)
    assert "xsky-slow-294835" in said and "`starter.py follow xsky-slow-294835`" in said, said
    assert "`starter.py cancel xsky-slow-294835`" in said, said
