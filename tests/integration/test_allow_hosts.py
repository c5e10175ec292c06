"""A run started with --allow-host 127.0.0.1:PORT fetches that local page and nothing else
of the machine; a plan's own words cannot open a host."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

import pytest

from client import XSky
from tests.conftest import Env
from tests.integration.helpers import plan
from tests.integration.test_cli_runs import starter
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


class _Page(BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"local page on {self.server.server_address[1]}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def sites() -> Iterator[tuple[int, int]]:
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Page) for _ in range(2)]
    for s in servers:
        Thread(target=s.serve_forever, daemon=True).start()
    yield servers[0].server_address[1], servers[1].server_address[1]
    for s in servers:
        s.shutdown()


def fetch(agent_id: str, port: int, **extra: object) -> str:
    config = {"tool": "http_get", "url": f"http://127.0.0.1:{port}/", **extra}
    return (
        f'<agent name="browser" id="{agent_id}"><task>fetch {port}</task>'
        f"<config><![CDATA[{json.dumps(config)}]]></config></agent>"
    )


async def test_an_allowed_local_port_is_fetched_and_another_port_stays_refused(
    env: Env, sites: tuple[int, int], tmp_path
):
    opened, other = sites
    await env.start_worker(kinds=["browser"])
    xml = tmp_path / "local.xml"
    xml.write_text(plan(fetch("1", opened), fetch("2", other), name="local"))
    run_id = f"xsky-local-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(
        env,
        "run",
        str(xml),
        "--allow-host",
        f"127.0.0.1:{opened}",
        "--max-replans",
        "0",
        "--id",
        run_id,
        "--follow",
        "--json",
    )
    assert code == 1, out + err  # one agent failed
    agents = {a["id"]: a for a in json.loads(out)["agents"]}
    assert agents["1"]["status"] == "completed", agents["1"]
    assert f"local page on {opened}" in agents["1"]["result"]
    assert agents["2"]["status"] == "failed"
    refusal = agents["2"]["error"]
    assert "loopback" in refusal and f"--allow-host 127.0.0.1:{other}" in refusal, refusal
    assert f'"network(domain:127.0.0.1:{other})"' in refusal
    assert str(tmp_path / "user-settings.json") in refusal  # the file this worker reads
    assert f"local page on {other}" not in json.dumps(agents["2"])


async def test_a_plan_cannot_open_a_host_for_itself(env: Env, sites: tuple[int, int]):
    opened, _ = sites
    await env.start_worker(kinds=["browser"])
    # Whatever the plan's config says, only the options the starter gave open a host.
    config_says = fetch("1", opened, allowHosts=[f"127.0.0.1:{opened}"])
    async with XSky.connect() as x:
        run = await x.run(
            plan(config_says, name="self-opening"), options=RunOptions(max_auto_replans=0)
        )
        result = await run.result()
        assert result.agents[0].status == "failed"
        assert f"--allow-host 127.0.0.1:{opened}" in (result.agents[0].error or "")
        # The API says the same as the flag: allow_hosts opens it.
        run = await x.run(
            plan(fetch("1", opened), name="api-opened"),
            allow_hosts=[f"127.0.0.1:{opened}"],
            options=RunOptions(max_auto_replans=0),
        )
        result = await run.result()
        assert result.status == "completed", result.agents
        assert f"local page on {opened}" in (result.agents[0].result or "")
