"""The leader's decisions: a pure state machine over a run's tasks, requests and plan."""
