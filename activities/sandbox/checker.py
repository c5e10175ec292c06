"""The permission checker, run with a budget: off the worker's event loop, in a process of its
own, killed when it takes too long (the call is then refused).

Parsing a shell command is CPU work that hostile input can make slow; a worker must not
stall its heartbeats on it, and a checker that does not finish must not let anything
through. Commands are also capped in size before they reach it (``permissions.MAX_COMMAND``).

The checker process is a small Python started once per worker (and again after a kill),
reading one JSON request a line and answering one JSON decision a line; it has a memory
cap and a CPU-time cap of its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from xsky.security.mcp import Hint
from xsky.security.permissions import Decision, PermissionSettings, decide
from xsky.security.roles import RoleCapabilityModel

log = logging.getLogger("xsky.checker")

BUDGET_SECONDS = 2.0
ROOT = Path(__file__).resolve().parents[2]
_SERVER = f"""
import json, resource, sys
sys.path.insert(0, {str(ROOT)!r})
resource.setrlimit(resource.RLIMIT_AS, ({512 * 1024 * 1024}, {512 * 1024 * 1024}))
resource.setrlimit(resource.RLIMIT_CPU, (3600, 3600))
from xsky.security.roles import RoleCapabilityModel
from xsky.security.permissions import PermissionSettings, decide
for line in sys.stdin:
    q = json.loads(line)
    d = decide(q["tool"], q["arguments"], RoleCapabilityModel.model_validate(q["role"]),
               PermissionSettings.model_validate(q["settings"]), q["workspace"], q["protected"])
    sys.stdout.write(json.dumps({{"effect": d.effect, "reason": d.reason, "rule": d.rule, "hard": d.hard}}) + "\\n")
    sys.stdout.flush()
"""


class _Process:
    """The checker process and the lock that keeps its requests one at a time."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()

    async def ask(self, request: dict[str, Any], budget: float) -> dict[str, Any]:
        async with self.lock:
            if self.proc is None or self.proc.returncode is not None:
                self.proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    _SERVER,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,
                    cwd=ROOT,
                )
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            try:
                await self.proc.stdin.drain()
                line = await asyncio.wait_for(self.proc.stdout.readline(), budget)
            except BaseException:
                self.kill()
                raise
            if not line:
                self.kill()
                raise RuntimeError("the checker process ended")
            return json.loads(line)

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
        self.proc = None


_checkers: dict[int, _Process] = {}  # one per event loop (tests run several)


async def check(
    tool: str,
    arguments: dict[str, Any],
    role: RoleCapabilityModel,
    settings: PermissionSettings,
    workspace: str,
    protected: list[str] | None = None,
    budget: float = BUDGET_SECONDS,
    hints: Mapping[str, Hint] | None = None,
) -> Decision:
    """``permissions.decide`` within ``budget`` seconds; past it, or on any failure, a refusal."""
    if tool != "shell":
        # no parsing: cheap and bounded
        return decide(tool, arguments, role, settings, workspace, protected or (), hints)
    checker = _checkers.setdefault(id(asyncio.get_running_loop()), _Process())
    request = {
        "tool": tool,
        "arguments": arguments,
        "role": role.model_dump(mode="json"),
        "settings": settings.model_dump(mode="json"),
        "workspace": workspace,
        "protected": protected or [],
    }
    first_use = checker.proc is None
    try:
        # the first call also starts Python
        answer = await checker.ask(request, budget + (5.0 if first_use else 0.0))
    except TimeoutError:
        log.warning("the permission checker ran past its %.1fs budget; the call is refused", budget)
        return Decision(
            "deny",
            f"refused: checking this command took longer than {budget:g}s (the checker's budget); "
            "write it as plain commands or a script file",
            hard=True,
        )
    except (OSError, RuntimeError, ValueError) as e:
        return Decision(
            "deny", f"refused: the permission checker failed ({type(e).__name__}: {e})", hard=True
        )
    return Decision(
        answer["effect"], answer["reason"], answer.get("rule"), bool(answer.get("hard"))
    )
