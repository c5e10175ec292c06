"""An agent's ``<config>``: the reserved keys xsky reads, the rest are tool arguments.

Reserved keys (camelCase, as on the wire):

* ``tool`` — run this tool directly with the other keys as its arguments (no LLM): one of
  ``xsky.security.tools.DIRECT_TOOLS``;
* ``startToCloseTimeout``, ``heartbeatTimeout`` — seconds, per attempt;
* ``retry`` — ``{"maximumAttempts": 3, "initialInterval": 1, "backoffCoefficient": 2,
  "maximumInterval": 30}``;
* ``retries`` — how often a deterministic failure (a non-zero exit, an HTTP 4xx, a refused
  argument) is tried again, 0–10 (default 0: such a failure is final on its first attempt,
  and no automatic replan follows it); transient failures are retried by ``retry`` anyway;
* ``stall`` — ``false`` to switch the stall ladder off for this agent, or
  ``{"nudgeAfter": 180, "restartAfter": 420}`` (seconds without progress);
* ``model``, ``maxIterations``, ``temperature`` — for LLM agents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from xsky.leader.state import StallWindows
from xsky.runs import RetryOptions, RunOptions
from xsky.security.tools import DIRECT_TOOLS  # the registry's direct tools, llm and noop

RESERVED_KEYS = frozenset(
    {
        "tool",
        "startToCloseTimeout",
        "heartbeatTimeout",
        "retry",
        "retries",
        "stall",
        "model",
        "maxIterations",
        "temperature",
    }
)


@dataclass(frozen=True)
class ActivitySettings:
    start_to_close: float
    heartbeat: float
    retry: RetryOptions


def tool_name(config: dict[str, Any] | None) -> str | None:
    if not config:
        return None
    tool = config.get("tool")
    return tool if isinstance(tool, str) else None


def tool_arguments(config: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (config or {}).items() if k not in RESERVED_KEYS}


def activity_settings(config: dict[str, Any] | None, options: RunOptions) -> ActivitySettings:
    """Per-agent timeouts and retries: the agent's config over the run's defaults."""
    problems = config_problems(config)
    if problems:
        raise ValueError("; ".join(problems))
    cfg = config or {}
    retry = options.retry
    if "retry" in cfg:
        retry = RetryOptions.model_validate(
            {**options.retry.model_dump(by_alias=True), **cfg["retry"]}
        )
    return ActivitySettings(
        start_to_close=float(cfg.get("startToCloseTimeout", options.start_to_close_timeout)),
        heartbeat=float(cfg.get("heartbeatTimeout", options.heartbeat_timeout)),
        retry=retry,
    )


MAX_RETRIES = 10


def deterministic_retries(config: dict[str, Any] | None) -> int:
    """``<config>{"retries": N}``: how often this agent's deterministic failures are tried
    again (0 when absent or not valid: config_problems reports a bad value at parse)."""
    value = (config or {}).get("retries")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
        return 0
    return value


def stall_windows(config: dict[str, Any] | None, default: StallWindows) -> StallWindows:
    """The agent's stall windows: its config's ``stall`` over the run's."""
    value = (config or {}).get("stall")
    if value is None:
        return default
    if value is False:
        return default.model_copy(update={"enabled": False})
    return StallWindows.model_validate({**default.model_dump(by_alias=True), **value})


def config_problems(config: dict[str, Any] | None) -> list[str]:
    """What is wrong with the reserved keys of one agent's config (empty when fine)."""
    if not config:
        return []
    problems = []
    tool = config.get("tool")
    if tool is not None and tool not in DIRECT_TOOLS:
        problems.append(
            f"config tool {tool!r} is not a direct tool; use one of {', '.join(DIRECT_TOOLS)}"
        )
    for key in ("startToCloseTimeout", "heartbeatTimeout"):
        if key in config:
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                problems.append(f"config {key} must be a positive number of seconds, not {value!r}")
    if "retry" in config:
        if not isinstance(config["retry"], dict):
            problems.append('config retry must be an object such as {"maximumAttempts": 3}')
        else:
            try:
                RetryOptions.model_validate(config["retry"])
            except ValidationError as e:
                detail = "; ".join(
                    f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()
                )
                problems.append(f"config retry is not valid ({detail})")
    if "retries" in config:
        value = config["retries"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
            problems.append(
                f"config retries must be a whole number from 0 to {MAX_RETRIES}, not {value!r}"
            )
    if "stall" in config:
        value = config["stall"]
        if value is not False and not isinstance(value, dict):
            problems.append(
                'config stall must be false or an object such as {"nudgeAfter": 180, "restartAfter": 420}'
            )
        elif isinstance(value, dict):
            try:
                StallWindows.model_validate(value)
            except ValidationError as e:
                detail = "; ".join(
                    f"{'.'.join(map(str, err['loc'])) or 'stall'}: {err['msg']}"
                    for err in e.errors()
                )
                problems.append(f"config stall is not valid ({detail})")
    if "maxIterations" in config:
        value = config["maxIterations"]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 200:
            problems.append(
                f"config maxIterations must be a whole number from 1 to 200, not {value!r}"
            )
    return problems
