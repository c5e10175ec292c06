"""The live run page's server: the page, the runs, each run's event stream (SSE, resumable
with Last-Event-ID), an agent's transcript as it grows (SSE), and the interventions — through
the same Python API calls as the CLI, so the same validators refuse with the same reason.

The browser never polls: it holds an EventSource per stream. The server watches each open
run by long-polling its history (client/events.py) and keeps the run's event log on disk,
so a page that reconnects — after a network blip or a restart of this server — is sent
exactly what it missed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from cli.budget_cmd import set_limits
from cli.hints import cli_message
from cli.steer_cmd import no_version_given, request_id
from cli.ui.guard import PageGuard
from client import Run, XSky
from client.events import EventLog, watch
from client.fork import REPEATS, REPEATS_FOLLOW_UP
from xsky.agent_log import UNLOGGED_SAID, parse_lines, render_event
from xsky.errors import UsageError, XSkyError
from xsky.leader.run_events import EVENT_TYPES
from xsky.plan.budget import EXAMPLE

log = logging.getLogger("xsky.ui")

STATIC = Path(__file__).parent / "static"
PING_SECONDS = 15.0  # a comment now and then: proxies keep the stream open, a dead one is noticed
RETRY_MS = 1000  # how soon a browser reconnects after the stream breaks
LOG_RECHECK_SECONDS = 2.0  # a transcript is re-read on the run's events, and at least this often


def sse(data: str, event_id: int | None = None) -> str:
    """One server-sent event (``data`` is one line of JSON: no line breaks to split)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {data}\n\n"


class Runs:
    """The connection and one watched event log per open run."""

    def __init__(self, connect: Callable[[], Awaitable[XSky]], folder: Path | None):
        self._connect = connect
        self._x: XSky | None = None
        self.folder = folder
        self.logs: dict[str, EventLog] = {}
        self.watchers: dict[str, asyncio.Task[None]] = {}

    async def x(self) -> XSky:
        if self._x is None:
            self._x = await self._connect()
        return self._x

    async def run(self, run_id: str) -> Run:
        return await (await self.x()).get(run_id)

    async def events(self, run_id: str) -> EventLog:
        """The run's log, its watcher started if it is not watched (again) yet."""
        events = self.logs.get(run_id)
        if events is None:
            run = await self.run(run_id)  # RunNotFoundError before anything is written
            events = self.logs[run_id] = EventLog(run_id, self.folder)
        watcher = self.watchers.get(run_id)
        if watcher is None or watcher.done():
            run = await self.run(run_id)
            self.watchers[run_id] = asyncio.create_task(self._watch(run, events))
        return events

    async def _watch(self, run: Run, events: EventLog) -> None:
        try:
            await watch(run, events)
        except Exception as e:  # told in the stream; the next page open watches again
            log.exception("watching %s stopped", run.id)
            why = cli_message(e) if isinstance(e, XSkyError) else f"{type(e).__name__}: {e}"
            events.add([("watch.lost", {"why": why})])

    async def close(self) -> None:
        for task in self.watchers.values():
            task.cancel()
        await asyncio.gather(*self.watchers.values(), return_exceptions=True)


def transcript_lines(whole: bytes, offset: int) -> Iterator[tuple[dict[str, Any], int]]:
    """The events of whole transcript lines read at ``offset``, each with the offset after its
    own line — its event id: a reconnect in the middle of a batch goes on at the next line,
    none skipped (each line of a batch once had the batch's end as its id) or repeated."""
    for raw in whole.splitlines(keepends=True):
        offset += len(raw)
        for line in parse_lines(raw.decode("utf-8", errors="replace")):
            yield {"type": line.get("type"), "text": render_event(line)}, offset


def _said(e: Exception) -> JSONResponse:
    """An error as the page shows it: the CLI's sentence, never a traceback."""
    if isinstance(e, XSkyError):
        return JSONResponse({"ok": False, "error": cli_message(e)}, status_code=400)
    log.exception("an action failed")
    return JSONResponse(
        {"ok": False, "error": f"{type(e).__name__}: {e} (the server's log has the details)"},
        status_code=500,
    )


def _ask_to_repeat(e: UsageError, refused: str) -> dict[str, Any]:
    """A fork or a retry refused for what must not be repeated unasked (its fact begins with
    ``refused``): the page asks the person, then sends it again with again=true. Any other
    refusal is raised as it is."""
    if not e.fact.startswith(refused):
        raise e
    return {"ok": False, "error": e.fact, "confirm": "again"}


# What a field left empty is, said as the page shows it ("answer needs request" read as a word)
_NAMED = {"request": "the request's id (Q-1, E-1 or A-1: listed under Waiting for a person)"}


def _need(body: dict[str, Any], *names: str) -> list[str]:
    missing = [n for n in names if not str(body.get(n) or "").strip()]
    if missing:
        said = [_NAMED.get(n, n) for n in missing]
        raise UsageError(f"{body.get('action')} needs {' and '.join(said)}: fill it in")
    return [str(body[n]).strip() for n in names]


async def _act(run: Run, body: dict[str, Any]) -> dict[str, Any]:
    """One intervention, as the CLI's command of the same name makes it."""
    action = body.get("action")
    if action == "pause":
        said = await run.pause(reason=body.get("reason") or None)
    elif action == "resume":
        said = await run.resume()
    elif action == "answer":
        request, text = _need(body, "request", "text")
        said = await run.answer(request_id(request), text)
    elif action == "approve":
        (request,) = _need(body, "request")
        said = await run.approve(
            request_id(request), body.get("decision") or "allow_once", body.get("text")
        )
    elif action == "retry":
        (task,) = _need(body, "task")
        try:
            said = await run.retry(task, body.get("text") or None, again=body.get("again") is True)
        except UsageError as e:
            return _ask_to_repeat(e, REPEATS_FOLLOW_UP)
    elif action == "skip":
        (task,) = _need(body, "task")
        said = await run.skip(task, body.get("text") or "")
    elif action == "nudge":
        task, text = _need(body, "task", "text")
        said = await run.nudge(task, text)
    elif action == "fork":
        (task,) = _need(body, "task")
        try:
            fork = await run.fork(task, body.get("text") or None, again=body.get("again") is True)
        except UsageError as e:
            return _ask_to_repeat(e, REPEATS)
        return {"ok": True, "message": f"forked from {task}: {fork.id}", "open": fork.id}
    elif action == "cancel":  # with a task, that task; without, the whole run
        return {"ok": True, "message": await run.cancel(body.get("task") or None)}
    elif action == "approve-plan":
        version = str(body.get("version") or "").strip()
        if not version:
            raise await no_version_given(run)
        if not version.removeprefix("v").isdigit():
            raise UsageError(f"plan version {version!r}: give the number the page shows, e.g. 2")
        said = await run.approve_plan(int(version.removeprefix("v")), body.get("text") or None)
    elif action == "replan":  # a prompt for the planner, as `starter.py replan ID PROMPT`
        said = await run.replan(str(body.get("text") or ""))
    elif action == "budget":  # limits as `starter.py budget ID LIMITS [--task T]` takes them
        limits = str(body.get("limits") or "").strip()
        if not limits:
            raise UsageError(f"budget needs limits: fill them in, e.g. {EXAMPLE}")
        said = await set_limits(run, limits, body.get("task") or None)
    else:
        raise UsageError(
            f"unknown action {action!r}: pause, resume, answer, approve, retry, skip, nudge, "
            "fork, cancel, approve-plan, replan or budget"
        )
    if said.follow_up:  # the page opens the run that does it
        return {"ok": True, "message": said.message, "open": said.follow_up}
    return {"ok": True, "message": said.message}


def make_app(
    connect: Callable[[], Awaitable[XSky]],
    folder: Path | None,
    *,
    key: str,
    port: int,
    listen: str = "127.0.0.1",
) -> PageGuard:
    """The page's app; ``connect`` gives the Temporal connection (made on first use, on the
    server's own event loop); ``folder`` keeps the runs' event logs (None: in memory). Only
    a browser holding ``key`` (cli/ui/guard.py), on this machine's names (or ``listen``'s) at
    ``port``, is served."""
    runs = Runs(connect, folder)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def list_runs(request: Request) -> Response:
        try:
            rows = await (await runs.x()).runs(limit=int(request.query_params.get("limit", 30)))
        except Exception as e:  # noqa: BLE001 - one sentence for the page
            return _said(e)
        return JSONResponse(
            [
                {
                    "id": r.id,
                    "status": r.status,
                    "state": r.xsky_status,
                    "plan": r.plan,
                    "failed": r.failed,
                    "pending": r.pending,
                    "start": r.start.isoformat() if r.start else None,
                }
                for r in rows
            ]
        )

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            got = await runs.events(run_id)
        except Exception as e:  # noqa: BLE001 - one sentence for the page
            return _said(e)
        header = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        last = int(header) if header.isdigit() else 0

        async def stream() -> AsyncIterator[str]:
            nonlocal last
            yield f"retry: {RETRY_MS}\n\n"
            while True:
                new = got.after(last)
                for event in new:
                    last = event.id
                    yield sse(event.line(), event.id)
                if not new:
                    yield ": ping\n\n"
                # (what came while they were sent is sent now: sending may wait on the client)
                await got.wait(PING_SECONDS, last)

        return _stream(stream())

    async def agent_log(request: Request) -> Response:
        run_id, task = request.path_params["run_id"], request.path_params["task"]
        try:
            run = await runs.run(run_id)
            key = await run.transcript_key(task)
            got = await runs.events(run_id)
        except Exception as e:  # noqa: BLE001 - one sentence for the page
            return _said(e)
        header = request.headers.get("last-event-id") or "0"
        offset = int(header) if header.isdigit() else 0

        async def stream() -> AsyncIterator[str]:
            nonlocal offset
            yield f"retry: {RETRY_MS}\n\n"
            told = False  # that an agent which ended keeps no transcript (said once)
            while True:
                data = (await run.transcript_bytes(key))[offset:]
                whole = data[: data.rfind(b"\n") + 1]
                start = offset
                for said, after in transcript_lines(whole, start):
                    offset = after
                    yield sse(json.dumps(said), after)  # the id: where to go on from
                offset = start + len(whole)  # (a line that is no event counts too)
                if not whole:
                    if not offset and not told and await run.task_ended(task):
                        told = True
                        yield sse(
                            json.dumps({"type": "none", "text": f"{task}: {UNLOGGED_SAID}"}), 0
                        )
                    yield ": ping\n\n"
                await got.wait(LOG_RECHECK_SECONDS)

        return _stream(stream())

    async def act(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _said(UsageError('the request is not JSON: send {"action": …}'))
        if not isinstance(body, dict):
            return _said(UsageError('the request is not a JSON object: send {"action": …}'))
        try:
            return JSONResponse(await _act(await runs.run(request.path_params["run_id"]), body))
        except Exception as e:  # noqa: BLE001 - one sentence for the page
            return _said(e)

    async def types(request: Request) -> Response:
        return JSONResponse(list(EVENT_TYPES))

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/api/runs", list_runs),
            Route("/api/event-types", types),
            Route("/runs/{run_id}/events", events),
            Route("/runs/{run_id}/agents/{task}/log", agent_log),
            Route("/api/runs/{run_id}/act", act, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        lifespan=_closing(runs),
    )
    app.state.runs = runs
    return PageGuard(app, key, port, listen)


def _closing(runs: Runs) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: its watchers stop with it."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await runs.close()

    return lifespan


def _stream(body: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        body,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
