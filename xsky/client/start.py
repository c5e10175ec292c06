"""Starting a run: run ids and the names a plan refers to. A large plan goes to the store by
itself (Temporal's External Storage: activities/storage/payloads.py)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from xsky.errors import (
    UsageError,
)
from xsky.leader.core import QUEUE_KINDS
from xsky.plan.models import Workflow
from xsky.plan.variables import agent_references
from xsky.security.allow_hosts import host_rule

# -- starting ------------------------------------------------------------------------------------


def new_run_id(task_id: str) -> str:
    """A run id of its own for every start (so a workspace of its own): the plan's taskId,
    when it started, and a few random characters for starts within the same second."""
    return f"xsky-{task_id}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"


def check_hosts(hosts: list[str]) -> None:
    """Every host of ``RunOptions.allow_hosts`` must be one the worker opens (HOST, HOST:PORT,
    a local or private host with its port): one the worker would drop is a UsageError."""
    for text in hosts:
        try:
            host_rule(text)
        except ValueError as e:
            raise UsageError(
                f"allow_hosts: {e}", "nothing was started", topic="allow-host"
            ) from None


def check_names(
    wf: Workflow,
    variables: Mapping[str, str],
    context: Mapping[str, Any],
    done: str = "nothing was started",
) -> None:
    """A variable or context value the plan never uses is a typo: say which names it has."""
    refs = [r for agent in wf.agents for r in agent_references(agent)]
    declared = sorted(set(wf.variables) | {r.key for r in refs if r.kind == "variable"})
    keys = sorted({r.key.split(".")[0] for r in refs if r.kind == "context"})
    for what, given, known in (("variable", variables, declared), ("context", context, keys)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            names = ", ".join(known) if known else "none"
            raise UsageError(
                f"{what} {', '.join(unknown)}: the plan has no such name (its names: {names}); {done}",
                topic=f"unknown-{what}",
                subject=", ".join(unknown),
            )


def plan_kinds(wf: Workflow | None) -> list[str]:
    """The agent kinds (task queues) a plan needs; a prompt needs the planner's (llm)."""
    if wf is None:
        return ["llm"]
    return sorted({a.name if a.name in QUEUE_KINDS else "llm" for a in wf.agents})


def is_prompt(text: str) -> bool:
    """Words for the planner, not XML text and not the path of a plan file."""
    if text.lstrip().startswith("<") or text.endswith(".xml"):
        return False
    try:
        return not Path(text).is_file()
    except (OSError, ValueError):  # too long or NUL bytes for a path: words
        return True
