"""Plan files for the CLI (the loading itself is in :mod:`xsky.plan_files`)."""

from xsky.errors import PlanError, UsageError
from xsky.plan_files import LoadedPlan, load_plan, read_plan_bytes

__all__ = ["LoadedPlan", "PlanError", "UsageError", "load_plan", "read_plan_bytes"]
