"""Benchmark: what the OS sandbox costs.

1. Starting ``true`` five ways, interleaved, many times (median ms): a bare subprocess, bare
   ``bwrap`` with the shell tool's own arguments, the shell tool's runner with the sandbox off
   and on, and on with the Python watchdog instead of the compiled one. Target: the sandboxed
   runner within 10 ms of bare bwrap.
2. A 200-agent plan of shell agents (``echo``) through LeaderWorkflow, on the same server
   and workers, with the sandbox on and off (settings ``security.sandbox``), interleaved:
   the makespan ratio.

    python bench/sandbox.py [--calls 100] [--rounds 3] [--agents 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.sandbox import native
from activities.sandbox.bwrap import Confinement, command, identity, protected_paths, ready
from activities.sandbox.confine import scrubbed_env
from activities.sandbox.limits import attempt_cgroup
from activities.sandbox.workspace import make
from activities.tools import ToolContext
from activities.tools.shell import run_process
from bench.harness import summary, temporal, timed
from workflows.leader import LeaderWorkflow
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import RunInput, RunOptions


async def _bare(argv: list[str], ws: Path, env: dict[str, str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=ws,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    await proc.communicate()


async def process_cost(calls: int) -> dict[str, float]:
    """Median ms of starting ``true`` five ways, interleaved: a bare subprocess, bare bwrap
    (the argv the shell tool builds, run directly), and the shell tool's runner with the
    sandbox off and on (compiled watchdog), and on with the Python watchdog."""
    # A workspace as the worker makes one (owned by the sandbox user) in a folder it can
    # reach: the common case, where no path needs staging.
    base = Path(tempfile.mkdtemp(prefix="xsky-bench-sandbox-"))
    base.chmod(0o755)
    who = identity()
    ws = make(base / "workspace", *((who.uid, who.gid) if who.drop else (None, None)))
    confinement = Confinement(workspace=ws)
    confined = ToolContext(
        "bench",
        "1",
        ws,
        None,
        None,
        lambda n: None,  # type: ignore[arg-type]
        confinement=confinement,
    )
    plain = ToolContext("bench", "1", ws, None, None, lambda n: None, unconfined=True)  # type: ignore[arg-type]
    env = scrubbed_env(ws)
    bare_bwrap = command(["true"], replace(confinement, protected=protected_paths(ws)), None)
    compiled = native.watchdog_command

    def python_form() -> list[str]:
        return [sys.executable, "-I", "-S", str(native.PYTHON_FORM)]

    async def with_python_watchdog() -> None:
        native.watchdog_command = python_form  # type: ignore[assignment]
        try:
            await run_process(confined, ["true"], 10, 1024)
        finally:
            native.watchdog_command = compiled  # type: ignore[assignment]

    async def bare_bwrap_in_cgroup() -> None:
        # What the sandbox's limits add to bwrap: a cgroup made and removed per command.
        cgroup = attempt_cgroup(confinement.limits)
        try:
            argv = command(["true"], replace(confinement, protected=protected_paths(ws)), cgroup)
            await _bare(argv, ws, env)
        finally:
            if cgroup is not None:
                cgroup.remove()

    ways: dict[str, Callable[[], Awaitable[object]]] = {
        "bare subprocess": lambda: _bare(["true"], ws, env),
        "bare bwrap": lambda: _bare(bare_bwrap, ws, env),
        "bare bwrap in a cgroup of its own": bare_bwrap_in_cgroup,
        "shell tool, sandbox off": lambda: run_process(plain, ["true"], 10, 1024),
        "shell tool, sandbox on": lambda: run_process(confined, ["true"], 10, 1024),
        "shell tool, sandbox on, Python watchdog": with_python_watchdog,
    }
    times: dict[str, list[float]] = {k: [] for k in ways}
    for _ in range(5):  # warm-up: page cache, the bwrap binary, the compiled watchdog
        for way in ways.values():
            await way()
    for _ in range(calls):
        for name, way in ways.items():
            start = time.perf_counter()
            await way()
            times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) * 1000 for k, v in times.items()}


def shell_plan(n: int) -> Workflow:
    agents = [
        WorkflowAgent(
            id=str(i),
            name="shell",
            task=f"echo {i}",
            config={"tool": "shell", "command": f"echo {i}"},
        )
        for i in range(n)
    ]
    return Workflow(name=f"shell-{n}", task_id="shell", agents=agents)


async def makespans(rounds: int, agents: int) -> tuple[float, float]:
    project = Path(tempfile.mkdtemp(prefix="xsky-bench-project-"))
    settings_file = project / "worker-settings.json"  # a worker's security settings: its own file
    os.environ["XSKY_USER_SETTINGS"] = str(settings_file)
    wf = shell_plan(agents)
    async with temporal() as (client, queue):

        async def run(sandbox: str) -> None:
            settings_file.write_text(json.dumps({"security": {"sandbox": sandbox}}))
            result = await client.execute_workflow(
                LeaderWorkflow.run,
                RunInput(workflow=wf, options=RunOptions(max_parallel=50)),
                id=f"bench-sb-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )
            assert result.status == "completed", result.summary

        await run("on")
        await run("off")
        on, off = [], []
        for _ in range(rounds):
            on.append(await timed(lambda: run("on")))
            off.append(await timed(lambda: run("off")))
    return summary(on), summary(off)


async def main(calls: int, rounds: int, agents: int) -> None:
    problem = ready()
    if problem:
        print(f"no sandbox here: {problem}")
        return
    ms = await process_cost(calls)
    watchdog = "compiled" if native.compiled_watchdog() else "Python (no C compiler)"
    print(f"starting `true`, {calls} calls each way, interleaved, median (watchdog: {watchdog}):")
    for name, value in ms.items():
        print(f"  {name:<42} {value:6.1f} ms")
    over_bwrap = ms["shell tool, sandbox on"] - ms["bare bwrap"]
    over_cgroup = ms["shell tool, sandbox on"] - ms["bare bwrap in a cgroup of its own"]
    over_bare = ms["shell tool, sandbox off"] - ms["bare subprocess"]
    print(
        f"sandbox on, over bare bwrap in its cgroup: {over_cgroup:+.1f} ms (the watchdog and the runner)"
    )
    print(
        f"sandbox on, over bare bwrap: {over_bwrap:+.1f} ms (target ≤ 10 ms: {'met' if over_bwrap <= 10 else 'NOT met'})"
    )
    print(f"sandbox off, over a bare subprocess: {over_bare:+.1f} ms")
    print(
        "the Python watchdog's extra: "
        f"{ms['shell tool, sandbox on, Python watchdog'] - ms['shell tool, sandbox on']:+.1f} ms per command"
    )
    on, off = await makespans(rounds, agents)
    print(
        f"{agents}-agent shell plan, median of {rounds} rounds: sandbox on {on:.2f}s, off {off:.2f}s, ratio {on / off:.2f}×"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--agents", type=int, default=200)
    args = ap.parse_args()
    asyncio.run(main(args.calls, args.rounds, args.agents))
