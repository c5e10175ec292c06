"""A continued execution's first workflow task, timed as pure functions (no server, no sandbox).

A 30,000-agent run continues as new every ~4,000 events; each continued execution's first task
decodes the state handed on (a ~14.6 MB JSON snapshot half-way through) and builds the core
from it — and a task that fails (the SDK's deadlock detector) is replayed from that first task,
so its cost is paid again on every retry. This drives a random DAG of N no-op agents
(bench/harness.random_dag) half-way, takes the snapshot continue-as-new hands on
(Views.snapshot), puts it in the next execution's input as workflows/leader/io.py
``_input_with_state`` does, and times:

  decode   the input through the data converter (PlainPayloadErrors, type hint RunInput)
  core     LeaderCore(input with the state) — TaskBoard.index over every task
  task     both

    python bench/continued_task.py N [rounds]            (run from the tree measured)
    python bench/continued_task.py N [rounds] OLD_TREE   (this tree and OLD_TREE, side by side)

Best of ``rounds`` of the process's CPU time (time.process_time), ms. With OLD_TREE, each tree
is timed in a process of its own, alternately, and the state each core builds is compared.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any

sys.path.insert(0, os.getcwd())  # the tree measured: this one, or one exported from git


def half_way_core(n: int) -> tuple[Any, Any]:
    from bench.harness import random_dag
    from bench.last_task import T0
    from xsky.leader.core import LeaderCore, StartAgent
    from xsky.runs import AgentOutcome, RunInput, RunOptions

    inp = RunInput(workflow=random_dag(n, seed=5), options=RunOptions(max_parallel=200))
    core = LeaderCore(inp, "run-1", T0)
    now, running, done_n = T0, {}, 0
    for c in core.dispatch(now):
        if isinstance(c, StartAgent):
            running[c.agent_id] = c.dispatch
    while running and done_n < n // 2:
        now += timedelta(milliseconds=5)
        done, running = running, {}
        for agent_id, dispatch in done.items():
            outcome = AgentOutcome(kind="completed", result="ok")
            core.attempt_succeeded(agent_id, core.tasks[agent_id], dispatch, outcome, now)
            core.attempt_ended(agent_id, dispatch)
            done_n += 1
        core.take_changed()
        core.tick(now)
        for c in core.dispatch(now):
            if isinstance(c, StartAgent):
                running[c.agent_id] = c.dispatch
    return core, now


def best(f: Any, rounds: int) -> tuple[float, Any]:
    out: object = None
    ms = 1e12
    for _ in range(rounds):
        out = None  # the last round's objects freed before the clock starts, not inside it
        gc.collect()
        t0 = time.process_time()
        out = f()
        ms = min(ms, (time.process_time() - t0) * 1000)
    return ms, out


def measure(n: int, rounds: int) -> dict[str, Any]:
    from temporalio.api.common.v1 import Payload

    from client.connect import PlainPayloadErrors
    from xsky.gcpause import gc_paused
    from xsky.leader.core import LeaderCore
    from xsky.runs import RunInput
    from xsky.wire import build_models

    core, now = half_way_core(n)
    snapshot = core.views.snapshot()
    rest = core.continue_input().model_copy(update={"workflow": None, "state": None})
    head = rest.model_dump_json(exclude={"state"})
    data = f'{head[:-1]},"state":{snapshot}}}'.encode()  # as io.py _input_with_state
    payload = Payload(metadata={"encoding": b"json/plain"}, data=data)
    converter = PlainPayloadErrors()
    build_models()  # a worker builds them before it serves
    del core
    decode_ms, decoded = best(lambda: converter.from_payloads([payload], [RunInput])[0], rounds)
    assert isinstance(decoded, RunInput)

    def build(inp: RunInput) -> LeaderCore:
        with gc_paused():  # as LeaderWorkflow.__init__ builds it
            return LeaderCore(inp, "run-1", now)

    core_ms, built = best(lambda: build(decoded), rounds)

    def task() -> object:
        return build(converter.from_payloads([payload], [RunInput])[0])

    task_ms, _ = best(task, rounds)
    board = built.board
    fingerprint = json.dumps(
        [board._heap, board._missing, board._dependents, board._order, board.counts],
        sort_keys=True,
    )
    return {
        "agents": n,
        "snapshot_mb": round(len(snapshot) / 1e6, 1),
        "decode_ms": round(decode_ms, 1),
        "core_ms": round(core_ms, 1),
        "task_ms": round(task_ms, 1),
        "ready": len(board.ready_ids()),
        "board_sha": hashlib.sha256(fingerprint.encode()).hexdigest()[:16],
    }


def side_by_side(n: int, rounds: int, old: str) -> None:
    new = os.getcwd()
    results: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for _ in range(2):  # alternately, so a change of the machine's load hits both
        for name, tree in (("old", old), ("new", new)):
            env = {**os.environ, "PYTHONPATH": tree}
            out = subprocess.run(
                [
                    sys.executable,
                    os.path.join(new, "bench", "continued_task.py"),
                    str(n),
                    str(rounds),
                ],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            results[name].append(json.loads(out.strip().splitlines()[-1]))
    rows = {
        k: {m: min(r[m] for r in v) for m in ("decode_ms", "core_ms", "task_ms")}
        for k, v in results.items()
    }
    print(
        f"{n:,} agents, snapshot {results['new'][0]['snapshot_mb']} MB, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'':10s} {'old':>10s} {'new':>10s}")
    for m in ("decode_ms", "core_ms", "task_ms"):
        print(f"{m:10s} {rows['old'][m]:10.1f} {rows['new'][m]:10.1f}")
    same = results["old"][0]["board_sha"] == results["new"][0]["board_sha"]
    print(f"same board indexes: {same}")
    print(json.dumps({"old": rows["old"], "new": rows["new"], "same_board": same}))


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    rounds_ = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if len(sys.argv) > 3:
        side_by_side(size, rounds_, os.path.abspath(sys.argv[3]))
    else:
        print(json.dumps(measure(size, rounds_)))
