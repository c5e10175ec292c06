"""The leader's last workflow task(s), timed as pure functions (no server, no sandbox).

Builds a LeaderCore for a random DAG of N no-op agents (bench/harness.random_dag), drives every
agent to completion with result "ok" (as a no-op agent's), then times each step the workflow's
end makes (workflows/leader/workflow.py, LeaderWorkflow.run after the main loop):

  task A (the last agent's completion arrives): views.result(), reports_jsonl(), blob_ref + split
          (sha256 over the text), the first BLOB_WAVE leader_put inputs converted (DATA_CONVERTER)
  task B (after the results' parts are stored): whole_board() as shown and as stored (both, for
          runs before final-board-as-shown), blob_ref + split, conversion of its first parts
  task C: upsert + the RunResult converted

    python bench/last_task.py N [rounds]     (run from the tree measured; CPU=0: wall time)
prints best-of-rounds ms (the process's CPU time) per step and per task, as JSON on the last
line. On a tree from before ``Views.ending`` it times the two passes each end made then.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta

sys.path.insert(0, os.getcwd())  # the tree measured: this one, or one exported from git

from bench.harness import random_dag
from client.connect import DATA_CONVERTER
from xsky.artifacts import STORED_PART_CHARS, BlobPart, BlobRef, blob_ref, split_text
from xsky.leader.core import LeaderCore, StartAgent
from xsky.runs import AgentOutcome, RunInput, RunOptions

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def finished_core(n: int, result: str = "ok") -> tuple[LeaderCore, datetime]:
    core = LeaderCore(
        RunInput(workflow=random_dag(n, seed=5), options=RunOptions(max_parallel=200)), "run-1", T0
    )
    now = T0
    running: dict[str, int] = {}
    for c in core.dispatch(now):
        if isinstance(c, StartAgent):
            running[c.agent_id] = c.dispatch
    while running:
        now += timedelta(milliseconds=5)
        done, running = running, {}
        for agent_id, dispatch in done.items():
            outcome = AgentOutcome(kind="completed", result=result)
            core.attempt_succeeded(agent_id, core.tasks[agent_id], dispatch, outcome, now)
            core.attempt_ended(agent_id, dispatch)
        core.take_changed()
        core.tick(now)
        for c in core.dispatch(now):
            if isinstance(c, StartAgent):
                running[c.agent_id] = c.dispatch
    assert core.finished(), "not finished"
    core.begin_close()
    return core, now


def convert(values: list[object]) -> None:
    DATA_CONVERTER.payload_converter.to_payloads(values)


CLOCK = time.process_time if os.environ.get("CPU", "1") == "1" else time.perf_counter


def timed(fn):
    t = CLOCK()
    out = fn()
    return (CLOCK() - t) * 1000, out


def stored(row: dict[str, float], task: str, name: str, text: str) -> BlobRef:
    """What save_blob does with ``text`` before its parts leave (their reference and split,
    the conversion of the first two), each step timed into ``row``; the reference."""
    row[f"{task}.ref+split"], (ref, parts) = timed(
        lambda: (
            blob_ref("run-1", name, text, STORED_PART_CHARS),
            split_text(text, STORED_PART_CHARS),
        )
    )
    row[f"{task}.convert_puts"], _ = timed(
        lambda: convert(
            [BlobPart(ref=ref, index=i, text=parts[i]) for i in range(min(2, len(parts)))]
        )
    )
    return ref


def one_round(core: LeaderCore, now: datetime) -> tuple[dict[str, float], int, int]:
    """Each step of the end once: ``(ms by step, results chars, board chars)``."""
    row: dict[str, float] = {}
    views = core.views
    new = hasattr(views, "ending")
    if new:  # the fixed tree: one pass
        row["A.ending"], (result, text) = timed(lambda: views.ending(now))
    else:
        row["A.result"], result = timed(lambda: views.result(now))
        row["A.reports_jsonl"], text = timed(views.reports_jsonl)
    ref = stored(row, "A", "results", text)
    if new:
        row["B.final_board"], (board, _) = timed(lambda: views.final_board(now))
    else:
        row["B.whole_board_shown"], board = timed(lambda: views.whole_board(now))
        row["B.whole_board_stored"], before = timed(lambda: views.whole_board(now, as_shown=False))
        row["B.compare"], _ = timed(lambda: board != before)
    bref = stored(row, "B", "board", board)
    result.results_ref = ref
    result.board_ref = bref
    row["C.convert_result"], _ = timed(lambda: convert([result]))
    return row, len(text), len(board)


def main(n: int, rounds: int) -> dict[str, float]:
    core, now = finished_core(n)
    gc.collect()
    if not os.environ.get("NOFREEZE"):
        gc.freeze()  # (NOFREEZE=1: the state's objects left for the collector to walk)
    best: dict[str, float] = {}
    for _ in range(rounds):
        row, results_chars, board_chars = one_round(core, now)
        for k, v in row.items():
            best[k] = min(best.get(k, v), v)
    for task in "ABC":
        best[f"task {task}"] = sum(v for k, v in best.items() if k.startswith(f"{task}."))
    best["results chars"] = results_chars
    best["board chars"] = board_chars
    return best


if __name__ == "__main__":
    n = int(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    t = time.perf_counter()
    out = main(n, rounds)
    for k, v in out.items():
        print(f"{k:24}{v:>12,.1f}")
    print(json.dumps({"agents": n, **{k: round(v, 1) for k, v in out.items()}}))
