"""An MCP server's answers cannot stop the worker that calls it: its outputSchema's pattern is
never matched by the SDK on the worker's event loop, and an input schema whose $refs fan out
(or loop) is not offered."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from activities.mcp.launch import Place
from activities.mcp.pool import McpPool
from activities.mcp.servers import Launch
from xsky.security.mcp import tool_infos

HOSTILE = Path(__file__).parents[1] / "fixtures" / "hostile_mcp.py"


async def test_a_servers_output_pattern_never_stalls_the_workers_event_loop(tmp_path: Path):
    # "^(a|a)+$" against 27 a's and a b: ~8 s of the GIL in the SDK's check (days at 45)
    launch = Launch(
        name="hostile", transport="stdio", digest="x", shown="py",
        command=sys.executable, args=(str(HOSTILE), "regex", "27"),
    )  # fmt: skip
    place = Place(tmp_path, None, None, None)
    pool = McpPool()
    gaps: list[float] = []

    async def beat() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.1)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(beat())
    try:
        await pool.session(launch, place)
        result = await asyncio.wait_for(pool.call(launch, place, "q", {}), 60)
        assert not result.is_error
    finally:
        ticking.cancel()
        await pool.close()
    assert max(gaps, default=0.0) < 3.0, gaps  # (a heartbeat every 0.1 s went on)


def test_an_input_schema_whose_refs_fan_out_is_not_offered_a_recursive_one_is():
    defs = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(17)}
    fanning = {"type": "object", "$defs": {**defs, "d17": {}}, "allOf": [{"$ref": "#/$defs/d0"}]}
    # a recursive filter (Linear's, Notion's; any self-referencing pydantic model): a check
    # goes only as deep as the arguments do — offered
    node = {"type": "array", "items": {"$ref": "#/$defs/F"}}
    recursive = {"$defs": {"F": {"type": "object", "properties": {"and": node, "or": node}}}}
    plain = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        {"name": "fan", "inputSchema": fanning},  # 1.2 KB, checked in 2.8 s; 40 levels: months
        {"name": "filter", "inputSchema": {**recursive, "$ref": "#/$defs/F"}},
        {"name": "loop", "inputSchema": {"$ref": "#"}},
        {"name": "plain", "inputSchema": plain},
    ]
    offered, refused = tool_infos("s", tools)
    assert [t.tool for t in offered] == ["filter", "loop", "plain"]
    assert len(refused) == 1 and "$refs followed, has more than" in refused[0]


async def test_a_message_longer_than_the_cap_ends_the_session_before_it_is_held_whole(
    tmp_path: Path, monkeypatch
):
    import resource

    import activities.mcp.launch as launch_module

    monkeypatch.setattr(launch_module, "MAX_LINE_CHARS", 1 << 20)  # (40 MiB in the product)
    launch = Launch(
        name="hostile", transport="stdio", digest="x", shown="py",
        command=sys.executable, args=(str(HOSTILE), "longline", "64"),  # one line of 64 MiB
    )  # fmt: skip
    place = Place(tmp_path, None, None, None)
    pool = McpPool()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        await pool.session(launch, place)
        try:
            result = await asyncio.wait_for(pool.call(launch, place, "q", {}), 30)
        except TimeoutError:
            said = "answered: nothing within 30 s (a call that hangs is no answer either)"
        except Exception as e:  # noqa: BLE001 - the session ended: the call fails, as it should
            said = f"failed: {e!r}"
        else:
            said = f"answered: {len(str(result))} characters"
    finally:
        await pool.close()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
    assert not said.startswith("answered"), said
    assert grown < 48 * 1024, grown  # never the 64 MiB line (and its copies) in the worker


async def test_an_http_servers_answer_longer_than_the_cap_fails_before_it_is_held_whole(
    tmp_path: Path, monkeypatch
):
    import subprocess

    import activities.mcp.launch as launch_module
    from activities.sandbox.egress_policy import Policy
    from cli.devserver import free_port

    monkeypatch.setattr(launch_module, "MAX_LINE_CHARS", 1 << 20)  # (40 MiB in the product)
    said: list[str] = []
    for mib in (4, 0):  # one answer of 4 MiB, one of a few bytes
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, str(HOSTILE.with_name("hostile_http_mcp.py")), str(port), str(mib)]
        )
        try:
            web = Policy.from_rules([f"127.0.0.1:{port}"], [], any_host=False, ports=None, settings_file="t")  # fmt: skip
            place = Place(tmp_path, None, None, web)
            launch = Launch(name="h", transport="http", digest="x", shown="http", url=f"http://127.0.0.1:{port}/mcp")  # fmt: skip
            pool = McpPool()
            for _ in range(50):  # (the server starting)
                try:
                    await pool.session(launch, place)
                    break
                except Exception:  # noqa: BLE001
                    await asyncio.sleep(0.1)
            try:
                result = await asyncio.wait_for(pool.call(launch, place, "q", {}), 30)
                said.append(f"answered {len(result.content[0].text)}")  # type: ignore[union-attr]
            except Exception as e:  # noqa: BLE001 - the message over the cap: the call fails
                said.append(f"failed: {e}")
            finally:
                await pool.close()
        finally:
            server.kill()
            server.wait()
    assert said[0].startswith("failed") and said[1] == "answered 0", said
