"""The leader's Temporal shell: :class:`~workflows.leader.workflow.LeaderWorkflow` and the parts
it runs with — its attempts, the workspace's host, the planner and the coordinator's activities,
blobs in parts, the board in the Web UI, its handlers. The decisions are the core's
(xsky/leader/core.py); this package turns Temporal events into the core's events and its
commands into activities, timers and replies."""

from workflows.leader.workflow import LeaderWorkflow

__all__ = ["LeaderWorkflow"]
