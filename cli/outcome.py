"""A run's RunResult however it ended (kept here for the tests and scripts that import it;
the logic is in :mod:`xsky.client`)."""

from xsky.client import OUTCOME_TYPES, result_of, run_outcome

__all__ = ["OUTCOME_TYPES", "result_of", "run_outcome"]
