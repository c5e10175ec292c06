"""Where a run is in its course, as the router moves it: planning its first plan, replanning,
draining for continue-as-new, closing, ended — and why it ended. Workflow-local (a run hands
itself on only between these), read by the components that must know (views, oversight)."""

from __future__ import annotations

from dataclasses import dataclass


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
