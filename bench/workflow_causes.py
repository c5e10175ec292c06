"""Issue 37 item 3: what makes the leader take ~28 workflow tasks on a 200 fan-out where a
bare workflow takes 4? Variants on ONE dev server, interleaved round by round:

  xsky          LeaderWorkflow, run_agent on its own queue, one in-process worker (bench harness)
  bare          BareDagWorkflow: string in, bare_step -> "ok", same worker as xsky
  bare+agent    the bare shape calling the SAME run_agent with an AgentInput, same worker as xsky
  xsky+instant  LeaderWorkflow on a worker whose "run_agent" returns an AgentOutcome at once
  xsky/10slots  LeaderWorkflow on a worker with worker.py's settings (10 workflow slots, sticky 10 s)
  xsky/split    LeaderWorkflow on a worker without run_agent; run_agent served on the same
                queue by a SEPARATE worker process (no eager dispatch, activity CPU elsewhere)
  bare/split    bare_step likewise in a separate process

Per run: wall (history's first→last event), workflow tasks, sum of started→completed of them,
the workflow threads' CPU (the SDK's workflow-task executor threads, from /proc), and the
bench process's whole CPU (workflow + in-process activities + SDK core).

    python bench/workflow_causes.py [--rounds 5] [--agents 200] [--only a,b]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.worker import Worker

from activities.agents.activity import AgentActivities
from activities.leader_store import LeaderStore
from activities.storage import io_threads
from bench.baselines import BareAgentDagWorkflow, BareDagWorkflow, bare_step, instant_run_agent
from bench.harness import dev_server, fan_out
from bench.workflow_tasks import measured
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from workflows.task_time import allow_task_time
from xsky.config import load_settings
from xsky.runs import RunInput, RunOptions
from xsky.security.tools import build_argument_models
from xsky.wire import build_models

ROOT = Path(__file__).resolve().parents[1]
CLK = os.sysconf("SC_CLK_TCK")


def thread_cpu(prefix: str) -> float:
    """CPU seconds of this process's live threads whose name starts with ``prefix``."""
    total = 0.0
    for t in threading.enumerate():
        if t.name.startswith(prefix) and t.native_id:
            try:
                f = (
                    Path(f"/proc/self/task/{t.native_id}/stat")
                    .read_text()
                    .rsplit(")", 1)[1]
                    .split()
                )
                total += (int(f[11]) + int(f[12])) / CLK
            except OSError:
                pass
    return total


def proc_cpu(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / CLK


ACT_WORKER = r"""
import asyncio, os, sys, dataclasses
sys.path.insert(0, os.environ["XSKY_ROOT"])
from temporalio.client import Client
from temporalio.worker import Worker
from activities.agents.activity import AgentActivities
from activities.leader_store import LeaderStore
from activities.storage import io_threads
from bench.baselines import bare_step
from client.connect import DATA_CONVERTER
from xsky.config import load_settings
from xsky.security.tools import build_argument_models
from xsky.wire import build_models
async def main():
    s = dataclasses.replace(load_settings(), task_queue=sys.argv[2])
    io_threads(s); build_models(); build_argument_models()
    c = await Client.connect(sys.argv[1], data_converter=DATA_CONVERTER)
    w = Worker(c, task_queue=sys.argv[2], activities=[*LeaderStore(s, agents_here=True).all(), AgentActivities(s).run_agent, bare_step],
               max_concurrent_activities=400)
    print("serving", flush=True)
    await w.run()
asyncio.run(main())
"""


async def main(rounds: int, agents: int, only: set[str] | None) -> None:
    wf = fan_out(agents)
    async with dev_server() as (client, tmp):
        os.environ["XSKY_HOME"] = str(tmp / "home")
        base = load_settings()
        io_threads(base)
        build_models()
        build_argument_models()
        executors: list[ThreadPoolExecutor] = []

        def make(queue: str, *, acts, workflows, slots=None, sticky=None, prefix="wf"):
            ex = ThreadPoolExecutor(
                max_workers=max(slots or 100, 8), thread_name_prefix=f"wft-{prefix}"
            )
            executors.append(ex)
            kw = {}
            if slots:
                kw["max_concurrent_workflow_tasks"] = slots
            if sticky:
                kw["sticky_queue_schedule_to_start_timeout"] = timedelta(seconds=sticky)
            return allow_task_time(
                Worker(
                    client,
                    task_queue=queue,
                    workflows=workflows,
                    activities=acts,
                    max_cached_workflows=100,
                    workflow_runner=workflow_runner(),
                    max_concurrent_activities=400,
                    workflow_task_executor=ex,
                    **kw,
                )
            )

        q = {k: f"wft-{k}-{uuid.uuid4().hex[:6]}" for k in ("main", "trivial", "slots", "split")}
        s_main = dataclasses.replace(base, task_queue=q["main"])
        s_triv = dataclasses.replace(base, task_queue=q["trivial"])
        s_slots = dataclasses.replace(base, task_queue=q["slots"])
        acts = AgentActivities(s_main)
        acts_slots = AgentActivities(s_slots)
        workers = [
            make(
                q["main"],
                prefix="main",
                workflows=[LeaderWorkflow, BareDagWorkflow, BareAgentDagWorkflow],
                acts=[*LeaderStore(s_main, agents_here=True).all(), acts.run_agent, bare_step],
            ),
            make(
                q["trivial"],
                prefix="triv",
                workflows=[LeaderWorkflow],
                acts=[*LeaderStore(s_triv, agents_here=True).all(), instant_run_agent],
            ),
            make(
                q["slots"],
                prefix="slots",
                workflows=[LeaderWorkflow],
                slots=10,
                sticky=10,
                acts=[*LeaderStore(s_slots, agents_here=True).all(), acts_slots.run_agent],
            ),
            make(q["split"], prefix="split", workflows=[LeaderWorkflow, BareDagWorkflow], acts=[]),
        ]
        env = dict(os.environ, XSKY_ROOT=str(ROOT), PYTHONPATH=str(ROOT))
        log = open(tmp / "actworker.log", "wb")
        server_addr = client.service_client.config.target_host
        helper = subprocess.Popen(
            [sys.executable, "-c", ACT_WORKER, server_addr, q["split"]],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while b"serving" not in (tmp / "actworker.log").read_bytes():
            assert helper.poll() is None and time.monotonic() < deadline, (
                tmp / "actworker.log"
            ).read_text()
            await asyncio.sleep(0.1)
        running = [asyncio.create_task(w.run()) for w in workers]
        leader_in = RunInput(workflow=wf, options=RunOptions(max_parallel=1000))
        kinds = {
            "xsky": (LeaderWorkflow.run, leader_in, q["main"], "wft-main"),
            "bare": (BareDagWorkflow.run, wf, q["main"], "wft-main"),
            "bare+agent": (BareAgentDagWorkflow.run, wf, q["main"], "wft-main"),
            "xsky+instant": (LeaderWorkflow.run, leader_in, q["trivial"], "wft-triv"),
            "xsky/10slots": (LeaderWorkflow.run, leader_in, q["slots"], "wft-slots"),
            "xsky/split": (LeaderWorkflow.run, leader_in, q["split"], "wft-split"),
            "bare/split": (BareDagWorkflow.run, wf, q["split"], "wft-split"),
        }
        if only:
            kinds = {k: v for k, v in kinds.items() if k in only}
        rows: dict[str, list[tuple]] = {}
        try:
            for r in range(rounds + 1):
                for name, (fn, arg, queue, prefix) in kinds.items():
                    await asyncio.sleep(0.5)
                    t0, c0, h0 = thread_cpu(prefix), time.process_time(), proc_cpu(helper.pid)
                    handle = await client.start_workflow(
                        fn,
                        arg,
                        id=f"wft-{name.replace('/', '-')}-{uuid.uuid4().hex[:8]}",
                        task_queue=queue,
                    )
                    await handle.result()
                    await asyncio.sleep(0.3)  # late completions' bookkeeping
                    wcpu = thread_cpu(prefix) - t0
                    pcpu = time.process_time() - c0
                    hcpu = proc_cpu(helper.pid) - h0
                    hist = await handle.fetch_history()
                    wall, _, n, wft, _ = measured(list(hist.events))
                    if r:
                        rows.setdefault(name, []).append(
                            (wall, n, wft, wcpu * 1000, pcpu * 1000, hcpu * 1000)
                        )
                    print(
                        f"  round {r} {name:13} wall {wall:7.0f} ms  WFTs {n:3}  WFT {wft:6.0f} ms  "
                        f"wf-thread CPU {wcpu * 1000:5.0f} ms  process CPU {pcpu * 1000:5.0f} ms  helper CPU {hcpu * 1000:4.0f} ms",
                        flush=True,
                    )
        finally:
            for w in workers:
                await w.shutdown()
            for t in running:
                t.cancel()
            helper.terminate()
            helper.wait(10)
            for ex in executors:
                ex.shutdown(wait=False)
    cols = ("wall ms", "WFTs", "WFT ms", "wf-thread CPU", "process CPU", "act-proc CPU")
    print(
        f"\n{agents}-agent fan-out, medians of {rounds} rounds (min–max of WFTs), load {os.getloadavg()}"
    )
    print(f"{'':14}" + "".join(f"{c:>15}" for c in cols))
    for name, s in rows.items():
        med = [statistics.median(x[i] for x in s) for i in range(len(cols))]
        ns = [x[1] for x in s]
        print(f"{name:14}" + "".join(f"{m:>15,.0f}" for m in med) + f"   WFTs {min(ns)}–{max(ns)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    asyncio.run(main(a.rounds, a.agents, set(a.only.split(",")) if a.only else None))
