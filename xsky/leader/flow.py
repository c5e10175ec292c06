"""Where a run is in its course, as the routers move it (xsky/leader/core.py, people.py):
planning its first plan, replanning, draining for continue-as-new, closing, ended — and why
it ended; and what the shell has not taken yet: that something changed, lines to log, commands
decided outside a call that returns them. Workflow-local (a run hands itself on only between
these), read by the components that must know (views, oversight)."""

from __future__ import annotations

from dataclasses import dataclass, field

from xsky.leader.commands import Command


@dataclass
class Flow:
    """The run's course flags."""

    # A prompt-only run starts with an empty plan; the shell asks the planner for one.
    planning: bool = False
    # the planner is at work (the first plan, a person's replan, an automatic one)
    replanning: bool = False
    # continue-as-new is due: start nothing new
    draining: bool = False
    # the run is about to return
    closing: bool = False
    # set when the run ends early (review timed out, ended by a person, budget spent)
    ended: str | None = None
    # ended by end_run: its status is its tasks' (failed when any failed), not "cancelled"
    ended_by_person: bool = False
    # ended because nobody raised a spent budget: failed, whatever its tasks' states
    ended_failed: bool = False

    # something changed since the shell last looked (it wakes the main loop): set by the events
    # that move something, never by the passes the loop makes every time unless they did
    changed: bool = False
    # what the shell should log (stall-ladder steps, budget escalations)
    log: list[str] = field(default_factory=list)
    # commands decided where no commands are returned (a person's answer asking for a replan)
    outbox: list[Command] = field(default_factory=list)
