"""A worker's metrics, traces and logs, from a real worker process after a real run.

One run, planned by a (fake) model, serves every test here: an LLM agent that calls two
tools, a direct tool that needs a person's approval, a slow no-op the stall ladder nudges,
and a shell agent. The worker serves Prometheus metrics, exports its spans to a local
OTLP/HTTP receiver and logs JSON; the run is started by a client without tracing, as the
CLI starts runs.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from temporalio.client import Client

from activities.telemetry import run_trace_ids
from cli.devserver import DevServer, free_port
from client.outcome import run_outcome
from tests.conftest import ROOT
from tests.fake_llm import FakeLLM, Reply, calls, coordinator_point, first_user, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import wait_requests
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ApproveToolRequest
from xsky.runs import RunInput

pytestmark = pytest.mark.integration

PLAN = """<workflow name="observed">
  <agent name="backend" id="1"><task>Write a greeting to notes/out.txt and count its bytes</task></agent>
  <agent name="explore" id="2"><task>say approved</task><config>{"tool": "shell", "command": "echo approved"}</config></agent>
  <agent name="llm" id="3"><task>wait</task>
    <config>{"tool": "noop", "seconds": 2.5, "stall": {"nudgeAfter": 1, "restartAfter": 30}}</config></agent>
  <agent name="shell" id="4"><task>say hi</task><config>{"tool": "shell", "command": "echo hi"}</config></agent>
</workflow>"""


def model(req: dict[str, Any], index: int) -> Reply:
    if "task planner" in first_user(req):
        return text(f"```xml\n{PLAN}\n```")
    if turn_of(req) == 0:
        return calls(
            ("file_write", {"path": "notes/out.txt", "content": "hello\n"}),
            ("shell", {"command": "wc -c < notes/out.txt"}),
        )
    return text("wrote and counted")


class OtlpReceiver:
    """A local OTLP/HTTP trace receiver: keeps every span it is sent (protobuf, as exported)."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            # http.server's naming
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest.FromString(body)
                receiver.spans += [
                    span
                    for rs in request.resource_spans
                    for ss in rs.scope_spans
                    for span in ss.spans
                ]
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Observed:
    workflow_id: str
    first_run_id: str
    fake: FakeLLM
    metrics_during: str  # /metrics while the approval was pending
    metrics_after: str  # /metrics once the run had ended
    log: Path
    spans: list[Any] = field(
        default_factory=list
    )  # every span the worker exported, once it stopped


def series(exposition: str, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (Prometheus text format)."""
    total = 0.0
    for line in exposition.splitlines():
        sample = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
        if sample is None or sample.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', sample.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(sample.group(3))
    return total


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


@pytest_asyncio.fixture(scope="module")
async def observed(
    server: DevServer, client: Client, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Observed]:
    tmp = tmp_path_factory.mktemp("observed")
    fake, receiver = FakeLLM(), OtlpReceiver()
    fake.responder = model
    queue, port = f"m{uuid.uuid4().hex[:7]}", free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "XSKY_"))}
    environ.update(
        TEMPORAL_ADDRESS=server.address,
        XSKY_TASK_QUEUE=queue,
        XSKY_HOME=str(tmp / "xsky"),
        XSKY_SKILLS_HOME=str(tmp / "skills-home"),
        PYTHONUNBUFFERED="1",
        OPENAI_BASE_URL=fake.base_url,
        OPENAI_API_KEY="sk-test-metrics",
        XSKY_MODEL="fake-model",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        # Nothing is exported on a schedule during the test: every span comes with
        # the flush at shutdown.
        OTEL_BSP_SCHEDULE_DELAY="600000",
    )
    log = tmp / "worker.log"
    with open(log, "ab") as out:
        worker = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "worker.py"),
                "--no-skills",
                "--grace",
                "1",
                "--metrics-port",
                str(port),
                "--log-format",
                "json",
            ],
            env=environ,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def serving() -> None:
            if worker.poll() is not None:
                pytest.fail(f"the worker exited:\n{log.read_text()}")
            assert b"serving" in log.read_bytes(), log.read_text()

        await eventually(serving, 60)
        workflow_id = f"xsky-observed-{uuid.uuid4().hex[:6]}"
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(task_prompt="greet, approve, wait and say hi", task_id="observed"),
            id=workflow_id,
            task_queue=queue,
        )
        (request,) = await wait_requests(handle, 1)
        during = await asyncio.to_thread(scrape, port)
        await handle.execute_update(
            LeaderWorkflow.approve_tool,
            ApproveToolRequest(request_id=request.id, decision="allow_once"),
        )
        result = await asyncio.wait_for(run_outcome(handle), 60)
        assert result.status == "completed", result.summary
        # The client sees the run end when the server does; the worker counts it once the
        # completion it sent is answered, a moment later: scrape until it has.

        async def counted() -> str:
            after = await asyncio.to_thread(scrape, port)
            done = series(after, "temporal_workflow_completed", workflow_type="LeaderWorkflow")
            assert done >= 1, "the worker has not counted the completed run yet"
            return after

        after = await eventually(counted, 5)
        first_run_id = (await handle.describe()).run_id
        worker.send_signal(signal.SIGTERM)
        await asyncio.to_thread(worker.wait, 30)
        yield Observed(workflow_id, first_run_id, fake, during, after, log, list(receiver.spans))
    finally:
        if worker.poll() is None:
            worker.kill()
        fake.close()
        receiver.close()


async def test_the_metrics_endpoint_serves_the_sdks_series_and_xskys_after_a_run(
    observed: Observed,
):
    m = observed.metrics_after
    # the SDK's own
    assert series(m, "temporal_workflow_completed", workflow_type="LeaderWorkflow") >= 1
    assert series(m, "temporal_activity_execution_latency_count", activity_type="run_agent") >= 5
    # agents: 1 (backend) and 3 (noop) run as llm, 2 (explore) too, twice (before and after
    # its approval); 4 as shell
    assert series(m, "xsky_agents_started", kind="llm") == 4
    assert series(m, "xsky_agents_started", kind="shell") == 1
    assert series(m, "xsky_agents_completed", kind="llm") == 3
    assert series(m, "xsky_agents_completed", kind="shell") == 1
    assert series(m, "xsky_agents_failed") == 0
    assert series(m, "xsky_agent_attempts", kind="llm", result="completed") == 3
    assert series(m, "xsky_agent_attempts", kind="llm", result="needs_approval") == 1
    assert series(m, "xsky_agent_attempts", kind="shell", result="completed") == 1
    # tool calls: what the model asked for, and the direct calls, by the gate's decision
    assert series(m, "xsky_tool_calls", tool="file_write", decision="allowed") == 1
    # the model's wc and agent 4's echo
    assert series(m, "xsky_tool_calls", tool="shell", decision="allowed") == 2
    assert series(m, "xsky_tool_calls", tool="shell", decision="asked") == 1
    assert series(m, "xsky_tool_calls", tool="shell", decision="approved") == 1
    # the planner's call and the agent's two, and the leader's coordinator on agent 1's result,
    # agent 2's tool request and the goal: 10 prompt and 5 completion tokens each
    # (tests/fake_llm.py)
    assert len(observed.fake.requests) == 3
    asked = sorted(coordinator_point(r) for r in observed.fake.coordinator_requests)
    assert asked == ["approval", "goal", "result"]
    calls = 3 + len(asked)
    assert series(m, "xsky_llm_tokens", model="fake-model", type="prompt") == 10 * calls
    assert series(m, "xsky_llm_tokens", model="fake-model", type="completion") == 5 * calls
    assert series(m, "xsky_llm_latency_count", model="fake-model", outcome="ok") == calls
    assert 0 < series(m, "xsky_llm_latency_sum", model="fake-model") < 10_000  # milliseconds
    # the 2.5 s no-op's first rung after 1 s: counted, not a nudge (a direct tool: no model
    # reads one; patch stall-rung-named)
    assert series(m, "xsky_stall_steps", step="counted") == 1
    assert series(m, "xsky_stall_steps", step="nudge") == 0
    # one approval put to a person, waiting while the run ran, closed by its end; no run label
    during = observed.metrics_during
    assert series(during, "xsky_requests_opened") - series(during, "xsky_requests_closed") == 1
    assert series(m, "xsky_requests_opened") == 1 and series(m, "xsky_requests_closed") == 1
    assert observed.workflow_id not in m


async def test_a_run_started_without_tracing_is_one_trace_from_planner_to_tool_calls(
    observed: Observed,
):
    trace_id, root_id = run_trace_ids(observed.workflow_id, observed.first_run_id)
    spans = [s for s in observed.spans if int.from_bytes(s.trace_id, "big") == trace_id]
    names = [s.name for s in spans]
    assert spans, (
        f"no span of the run's trace among {len(observed.spans)}: {sorted({s.name for s in observed.spans})}"
    )
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == "RunWorkflow:LeaderWorkflow"
    assert int.from_bytes(root.span_id, "big") == root_id
    for expected in (
        "StartActivity:plan_workflow",
        "RunActivity:plan_workflow",
        "StartActivity:run_agent",
        "RunActivity:run_agent",
        "HandleUpdate:approve_tool",
        "CompleteWorkflow:LeaderWorkflow",
    ):
        assert expected in names, f"{expected} missing from {sorted(set(names))}"
    judged = len(observed.fake.coordinator_requests)  # see the test above
    assert names.count("RunActivity:run_agent") == 5
    assert names.count("chat fake-model") == 3 + judged
    assert names.count("RunActivity:coordinate") == judged  # the leader's, in the same trace
    # the direct tools: agent 2 asked, then ran once approved; agent 4; agent 3's no-op; and
    # the LLM agent's own calls (file_write, then shell)
    assert names.count("tool shell") == 4 and names.count("tool noop") == 1
    assert names.count("tool file_write") == 1
    decisions = sorted(
        a.value.string_value
        for s in spans
        if s.name == "tool shell"
        for a in s.attributes
        if a.key == "xsky.decision"
    )
    assert decisions == ["allowed", "allowed", "approved", "asked"]
    ids = {s.span_id for s in spans}
    assert all(s.parent_span_id in ids for s in spans if s is not root), (
        "a span of the run's trace has no parent in it"
    )
    by_id = {s.span_id: s for s in spans}
    chats = [s for s in spans if s.name == "chat fake-model"]
    assert {by_id[s.parent_span_id].name for s in chats} == {
        "RunActivity:plan_workflow",
        "RunActivity:run_agent",
        "RunActivity:coordinate",
    }
    usage = {
        a.key: a.value.int_value for a in chats[-1].attributes if a.key.startswith("gen_ai.usage")
    }
    assert usage == {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}


async def test_json_logs_are_one_object_a_line_with_the_workflow_they_came_from(observed: Observed):
    lines = [line for line in observed.log.read_text().splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]  # every line, the SDK's core included
    assert all({"time", "level", "logger", "message"} <= e.keys() for e in entries)
    assert any("serving" in e["message"] and e["logger"] == "xsky.worker" for e in entries)
    nudge = next(e for e in entries if e["message"].startswith("stall ladder: T-3 counted"))
    assert (
        nudge["workflow"]["workflow_id"] == observed.workflow_id
        and nudge["workflow"]["workflow_type"] == "LeaderWorkflow"
    )
    assert "{" not in nudge["message"]  # the context is in its field, not pasted into the message
    assert entries[-1]["message"] == "worker stopped"


@pytest.mark.parametrize(
    "value, said",
    [
        ("metrics", "must be a port number (1-65535) or HOST:PORT, not 'metrics'"),
        ("in-use", "the address is in use"),
    ],
)
def test_a_bad_metrics_port_is_one_sentence_and_exit_2(value: str, said: str):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = value if value != "in-use" else str(taken.getsockname()[1])
        proc = subprocess.run(
            [sys.executable, str(ROOT / "worker.py"), "--metrics-port", port],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "TEMPORAL_ADDRESS": "127.0.0.1:1"},
        )
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
