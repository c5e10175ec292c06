"""A killed worker's runs go back to the other workers at once, not after the sticky wait.

Temporal sends a run's next workflow task to the *sticky* queue of the worker that ran its last
one (that worker keeps the run in memory). A worker that shuts down says so to the server (the
SDK does), and its runs' tasks go to the shared queue. A worker that is SIGKILLed, crashes or
is taken by the OOM killer cannot: the server keeps queueing its runs' tasks on a sticky queue
nobody polls until it notices the silence (~10 s), and every task queued meanwhile waits out
the sticky schedule-to-start timeout (``XSKY_STICKY_TIMEOUT``, 30 s) — measured: a chain's next
agent started 30.6 s after its predecessor ended when the leader's worker was killed between
them.

So a worker that runs workflows starts this process beside it (:func:`beside`), connected to
the server in advance and holding the read end of a pipe whose write end only the worker has.
At its shutdown the worker writes a goodbye; end of file without one is its death. This process
then lists the running workflows of the worker's queues, keeps those whose last workflow task
the dead worker took (its identity on the history's newest ``WorkflowTaskStarted``), and calls
``ResetStickyTaskQueue`` on each: their next tasks go to the shared queue, where the live
workers take them (measured: no gap over 0.61 s in the same chain). Runs other workers hold are
left alone (a reset would make their worker replay them from the start).

Not covered: a task queued on the dead sticky queue in the milliseconds between the death and
the reset still waits the timeout; a whole machine or container that dies takes this process
with it (its runs wait as before).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import (
    GetWorkflowExecutionHistoryReverseRequest,
    ResetStickyTaskQueueRequest,
)
from temporalio.client import Client

from activities import telemetry

log = logging.getLogger("xsky.sticky_release")

GOODBYE = b"bye"
PAGE = 200  # events per page of a history read newest first
PAGES = 10  # a wide wave's events after its last workflow task fill a few pages at most
AT_ONCE = 16  # histories read and resets sent concurrently
ROOT = Path(__file__).resolve().parents[1]


async def last_taken_by(client: Client, namespace: str, workflow_id: str, run_id: str) -> str:
    """The identity of the worker that took the run's newest workflow task ('' if none did)."""
    token = b""
    for _ in range(PAGES):
        page = await client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(
                namespace=namespace,
                execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
                maximum_page_size=PAGE,
                next_page_token=token,
            )
        )
        for event in page.history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
                return str(event.workflow_task_started_event_attributes.identity)
        token = page.next_page_token
        if not token:
            break
    return ""


async def release(client: Client, namespace: str, queues: dict[str, str]) -> list[str]:
    """Reset the sticky queue of every running workflow on ``queues`` (queue → the identity
    of the dead worker's poller on it) whose newest workflow task that worker took. Returns
    the workflow ids handed back."""
    gate = asyncio.Semaphore(AT_ONCE)
    released: list[str] = []

    async def one(workflow_id: str, run_id: str, identity: str) -> None:
        async with gate:
            try:
                if await last_taken_by(client, namespace, workflow_id, run_id) != identity:
                    return
                await client.workflow_service.reset_sticky_task_queue(
                    ResetStickyTaskQueueRequest(
                        namespace=namespace,
                        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
                    )
                )
            except Exception as e:  # noqa: BLE001 — one run ended or is unreadable: the rest go on
                log.info("run %s not handed back: %s", workflow_id, e)
                return
            released.append(workflow_id)

    jobs = []
    for queue, identity in queues.items():
        query = f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"
        async for wf in client.list_workflows(query):
            jobs.append(one(wf.id, wf.run_id, identity))
    await asyncio.gather(*jobs)
    return sorted(released)


@contextlib.contextmanager
def beside(address: str, namespace: str, queues: dict[str, str]) -> Iterator[None]:
    """Run the body with this process watching the worker for its death (nothing to watch
    when the worker runs no workflows)."""
    if not queues:
        yield
        return
    read, write = os.pipe()  # not inherited by the worker's other children
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "client.sticky_release",
                "--fd",
                str(read),
                "--address",
                address,
                "--namespace",
                namespace,
                *[f"--queue={q}={who}" for q, who in queues.items()],
                *(["--log-format=json"] if telemetry.logging_as_json() else []),
            ],
            pass_fds=(read,),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a ^C to the worker's group leaves it to hear the goodbye
        )
    finally:
        os.close(read)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.write(write, GOODBYE)
        os.close(write)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def _wait_for_end(fd: int) -> bytes:
    said = b""
    while chunk := os.read(fd, 64):
        said += chunk
    return said


async def _watch(fd: int, address: str, namespace: str, queues: dict[str, str]) -> int:
    from client.connect import connect_client
    from xsky.config import load_settings
    from xsky.errors import ConnectError

    settings = dataclasses.replace(load_settings(), address=address, namespace=namespace)
    try:
        client = await connect_client(settings)  # now, so the death is answered at once
    except ConnectError as e:
        log.warning("not watching for the worker's death: %s", e)
        return 1
    said = await asyncio.to_thread(_wait_for_end, fd)
    if said.endswith(GOODBYE):
        return 0  # shut down: the SDK has handed its runs back itself
    died = ", ".join(sorted(set(queues.values())))
    try:
        released = await release(client, namespace, queues)
    except Exception as e:  # noqa: BLE001 — the server may be gone too: the runs wait as before
        log.warning("worker %s died; its runs could not be handed back: %s", died, e)
        return 1
    log.warning(
        "worker %s died; %d run(s) it held handed back to the other workers%s",
        died,
        len(released),
        f": {', '.join(released[:10])}{' …' if len(released) > 10 else ''}" if released else "",
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m client.sticky_release")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--queue", action="append", default=[], help="QUEUE=IDENTITY")
    parser.add_argument("--log-format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    queues = dict(q.split("=", 1) for q in args.queue)
    if args.log_format == "json":  # as the worker's own lines, in the same stream
        telemetry.use_json_logs("INFO")
    else:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
    return asyncio.run(_watch(args.fd, args.address, args.namespace, queues))


if __name__ == "__main__":
    sys.exit(main())
