"""The live page's event stream (cli/ui/server.py ``events``) sends an event as soon as it is
in the run's log, even one added while the stream was sending (live12: added while a ping or the
events before it were being sent — a client slow to read, a long log replayed on a reconnect —
the stream waited on for its next ping, up to 15 s, with the event in the log)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request

from cli.ui.server import make_app
from client.events import EventLog


async def _never() -> Any:
    raise AssertionError("the test's run is watched already: nothing connects")


async def test_an_event_added_while_the_stream_sends_is_sent_at_once() -> None:
    app = make_app(_never, None, key="k", port=8765).app
    runs = app.state.runs
    log = runs.logs["xsky-r"] = EventLog("xsky-r")
    runs.watchers["xsky-r"] = asyncio.ensure_future(asyncio.Event().wait())  # (watched)
    route = next(r for r in app.routes if getattr(r, "path", "") == "/runs/{run_id}/events")
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/runs/xsky-r/events",
        "headers": [],
        "query_string": b"",
        "path_params": {"run_id": "xsky-r"},
    }
    chunks = (await route.endpoint(Request(scope))).body_iterator
    try:
        assert (await anext(chunks)).startswith("retry:")
        assert await anext(chunks) == ": ping\n\n"  # nothing yet; while the ping is sent …
        log.add([("run.state", {"was": "running", "state": "paused"})])  # … an event comes
        sent = await asyncio.wait_for(anext(chunks), 5)  # (not the next ping's 15 s)
        assert sent.startswith("id: 1\n") and '"run.state"' in sent
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]
        runs.watchers["xsky-r"].cancel()
