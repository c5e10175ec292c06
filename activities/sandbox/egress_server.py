"""The egress proxy process: one per worker, with its own limits, driven over a pipe.

Started by :mod:`.egress` (the worker's side) as ``python -m activities.sandbox.egress_server
CONFIG``; it dies with the worker (``PR_SET_PDEATHSIG``, and the end of its control pipe),
so sandboxed traffic never holds the worker's own file descriptors or memory.

Control protocol, one JSON object a line. The worker writes requests on the process's stdin:

- ``{"id": 1, "op": "open", "kind": K, "policy": {...}}`` — an endpoint enforcing a policy.
  K is ``unix`` (its own socket, for one sandbox's relay: ``{"path": …}``), ``tcp`` (a port
  of 127.0.0.1 answering only requests whose ``Proxy-Authorization`` carries its token:
  ``{"url": "http://user:token@127.0.0.1:port"}``), ``tcp-user`` (no token; only
  connections owned by this user) or ``session`` (credentials for the shared browser
  socket: ``{"username": …, "password": …}``). Every reply names the ``endpoint``.
- ``{"id": 2, "op": "close", "endpoint": "e1"}`` — its listener and connections end; the
  reply comes after every decision of the endpoint was written.
- ``{"id": 3, "op": "browser_socket"}`` — the shared browser socket's ``path``.
- ``{"id": 4, "op": "sync"}`` — an empty reply, written after every decision made before it
  (a caller whose connections were answered knows their decisions have reached it).

The proxy writes on its stdout replies (``{"reply": 1, …}``, or ``{"reply": 1, "error":
sentence}``) and, as they are made, decisions: ``{"event": "decision", "endpoint": "e1",
"destination": "host:port", "effect": "allow" | "deny", "reason": …}`` — each distinct
one once per endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hmac
import itertools
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from activities.sandbox import temporal_ports
from activities.sandbox.egress_connection import MAX_CONNECTIONS, Connection, Endpoint
from activities.sandbox.egress_http import MAX_HEAD, response
from activities.sandbox.egress_policy import Policy

NOFILE = 4096  # the process's own descriptors: two a proxied connection
MEMORY = 1 << 30  # its address space: the buffers of MAX_TOTAL connections fit in it
MAX_TOTAL = 1024  # connections of all endpoints together
MAX_PENDING = 64  # not yet authenticated, on the shared browser socket
BUSY = response(503, "Service Unavailable", "too many connections at once through this endpoint")
PR_SET_PDEATHSIG = 1


@dataclass
class Proxy:
    """Every endpoint of this process, and the control channel's writer."""

    send: Any  # Callable[[dict], None]: one line to the worker
    discovery: temporal_ports.Discovery
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    sessions: dict[str, Endpoint] = field(default_factory=dict)  # by username
    pending: set[asyncio.Task[Any]] = field(default_factory=set)  # shared socket, before auth
    open_connections: int = 0
    browser_dir: str | None = None
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def max_total(self) -> int:
        """Connections of all endpoints together: what the limits leave room for."""
        return min(MAX_TOTAL, (resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 128) // 2)

    def record(self, ep: Endpoint, destination: str, effect: str, reason: str) -> None:
        if ep.note(destination, effect, reason):
            self.send(
                {
                    "event": "decision",
                    "endpoint": ep.id,
                    "destination": destination,
                    "effect": effect,
                    "reason": reason,
                }
            )

    async def handle(self, msg: dict[str, Any]) -> None:
        try:
            if msg["op"] == "open":
                reply = await self.open(msg["kind"], msg["policy"])
            elif msg["op"] == "close":
                reply = await self.close(msg["endpoint"])
            elif msg["op"] == "browser_socket":
                reply = {"path": await self.browser_socket()}
            elif msg["op"] == "sync":
                reply = {}  # answered after every decision written before it
            else:
                raise ValueError(f"unknown control operation {msg['op']!r}")
        except Exception as e:  # noqa: BLE001 - every failure is answered, never lost
            reply = {"error": f"the egress proxy could not {msg.get('op')}: {e}"}
        self.send({"reply": msg.get("id"), **reply})

    async def open(self, kind: str, policy: dict[str, Any]) -> dict[str, Any]:
        ep = Endpoint(f"e{next(self.ids)}", kind, Policy.from_wire(policy))
        if kind in ("tcp", "session"):
            ep.token = secrets.token_urlsafe(24)
        if kind == "session":
            self.sessions[ep.id] = ep
            self.endpoints[ep.id] = ep
            return {"endpoint": ep.id, "username": ep.id, "password": ep.token}
        if kind == "unix":
            ep.dir = tempfile.mkdtemp(prefix="xsky-egress-")
            path = os.path.join(ep.dir, "proxy.sock")
            ep.listener = self.listen(ep, socket.AF_UNIX, path)
            os.chmod(path, 0o666)  # the sandboxed process may run as another uid
            self.endpoints[ep.id] = ep
            return {"endpoint": ep.id, "path": path}
        if kind not in ("tcp", "tcp-user"):
            raise ValueError(f"unknown endpoint kind {kind!r}")
        ep.listener = self.listen(ep, socket.AF_INET, ("127.0.0.1", 0))
        port = ep.listener.getsockname()[1]
        self.endpoints[ep.id] = ep
        userinfo = f"{ep.id}:{ep.token}@" if ep.token else ""
        return {"endpoint": ep.id, "url": f"http://{userinfo}127.0.0.1:{port}"}

    async def close(self, endpoint: str) -> dict[str, Any]:
        ep = self.endpoints.pop(endpoint, None)
        if ep is None:
            return {"closed": endpoint}
        self.sessions.pop(ep.id, None)
        if ep.listener is not None:
            asyncio.get_running_loop().remove_reader(ep.listener.fileno())
            ep.listener.close()
        tasks = list(ep.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # their decisions are written now
        if ep.busy:
            self.record(
                ep,
                "*",
                "deny",
                f"{ep.busy} connection(s) refused at once: more than {MAX_CONNECTIONS} were "
                "open through this endpoint at the same time",
            )
        if ep.overflow:
            self.record(ep, "*", "deny", ep.overflow_reason())
        if ep.unlisted:
            ep.seen.clear()  # room for the count itself
            self.record(ep, "*", "deny", f"{ep.unlisted} more refusal(s), not listed one by one")
        if ep.dir is not None:
            shutil.rmtree(ep.dir, ignore_errors=True)
        return {"closed": endpoint}

    async def browser_socket(self) -> str:
        if self.browser_dir is None:
            self.browser_dir = tempfile.mkdtemp(prefix="xsky-egress-browser-")
            path = os.path.join(self.browser_dir, "proxy.sock")
            self.listen(None, socket.AF_UNIX, path)
            os.chmod(path, 0o666)  # a sandboxed browser may run as another uid: tokens decide
            os.chmod(self.browser_dir, 0o711)
        return os.path.join(self.browser_dir, "proxy.sock")

    def session(self, username: str, password: str) -> Endpoint | None:
        ep = self.sessions.get(username)
        if ep is None or ep.token is None:
            return None
        if not hmac.compare_digest(ep.token.encode(), password.encode()):
            return None
        return ep

    def listen(self, ep: Endpoint | None, family: int, address: Any) -> socket.socket:
        """A listening socket whose connections are taken by :meth:`accept`."""
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.bind(address)
        listener.listen(128)
        listener.setblocking(False)
        asyncio.get_running_loop().add_reader(listener.fileno(), self.accept, ep, listener)
        return listener

    def accept(self, ep: Endpoint | None, listener: socket.socket) -> None:
        """Take waiting connections; over a cap, each is answered and closed at once, before
        it costs more than a moment's descriptor (so the process's stay bounded)."""
        loop = asyncio.get_running_loop()
        for _ in range(MAX_CONNECTIONS):  # then let the other endpoints' work run
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors: stop taking connections for a moment
                loop.remove_reader(listener.fileno())
                loop.call_later(0.1, self._resume, ep, listener)
                return
            group = ep.tasks if ep is not None else self.pending
            cap = MAX_CONNECTIONS if ep is not None else MAX_PENDING
            if self.open_connections >= self.max_total or len(group) >= cap:
                if ep is not None:
                    ep.busy += 1
                with contextlib.suppress(OSError):
                    conn.setblocking(False)
                    conn.send(BUSY)
                conn.close()
                continue
            self.open_connections += 1
            group.add(loop.create_task(self.connected(ep, conn)))

    def _resume(self, ep: Endpoint | None, listener: socket.socket) -> None:
        if listener.fileno() != -1:
            asyncio.get_running_loop().add_reader(listener.fileno(), self.accept, ep, listener)

    async def connected(self, ep: Endpoint | None, conn: socket.socket) -> None:
        """One client connection; ``ep`` None: the shared browser socket (credentials say which)."""
        task = asyncio.current_task()
        connection: Connection | None = None
        try:
            conn.setblocking(False)
            if conn.family == socket.AF_UNIX:
                reader, writer = await asyncio.open_unix_connection(sock=conn, limit=MAX_HEAD)
            else:
                reader, writer = await asyncio.open_connection(sock=conn, limit=MAX_HEAD)
            connection = Connection(self, ep, reader, writer)
            try:
                await connection.serve()
                await connection.linger()
            finally:
                writer.close()
        except (asyncio.CancelledError, OSError):
            conn.close()  # its endpoint closed, or the client is already gone
        finally:
            self.open_connections -= 1
            self.pending.discard(task)
            for owner in (ep, connection.ep if connection else None):
                if owner is not None:
                    owner.tasks.discard(task)

    async def shutdown(self) -> None:
        for endpoint in list(self.endpoints):
            await self.close(endpoint)
        if self.browser_dir is not None:
            shutil.rmtree(self.browser_dir, ignore_errors=True)


async def serve(config: dict[str, Any], control_in: int, control_out: int) -> None:
    """Answer the worker's requests until it closes the control pipe (or dies)."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(8, thread_name_prefix="egress"))  # lookups
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(control_in, "rb", 0)
    )
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(control_out, "wb", 0))

    def send(msg: dict[str, Any]) -> None:
        # In order: a close's reply follows the endpoint's decisions. Nobody to tell once the
        # worker is gone.
        if not transport.is_closing():
            transport.write(json.dumps(msg).encode() + b"\n")

    discovery = temporal_ports.configure(
        config["address"], config["ui_url"], tuple(config["layout"])
    )
    proxy = Proxy(send, discovery)
    running: set[asyncio.Task[None]] = set()
    while line := await reader.readline():
        try:
            msg = json.loads(line)
        except ValueError:
            print(f"egress proxy: a control line that is not JSON: {line[:200]!r}", file=sys.stderr)
            continue
        task = asyncio.create_task(proxy.handle(msg))
        running.add(task)
        task.add_done_callback(running.discard)
    await proxy.shutdown()


def _die_with_parent() -> bool:
    """Ask the kernel to kill this process when the worker dies; False if it already has."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return os.getppid() == parent  # the worker died before the request took hold


def _limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))


def main() -> int:
    if not _die_with_parent():
        return 0
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker's Ctrl-C is the worker's to handle
    _limit(resource.RLIMIT_NOFILE, NOFILE)
    _limit(resource.RLIMIT_AS, MEMORY)
    control_out = os.dup(1)
    os.dup2(2, 1)  # whatever else prints goes to stderr, never into the control channel
    socket.setdefaulttimeout(30)
    asyncio.run(serve(json.loads(sys.argv[1]), 0, control_out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
