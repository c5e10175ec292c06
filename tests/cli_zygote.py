"""``starter.py`` in a process of its own, without paying its imports each time.

Each ``starter.py`` a test runs spends about a second (more on a loaded machine) importing
Temporal's client, pydantic, rich and the leader before it does anything. This module's
``Zygote`` is one process, started once per test process, that has imported those — every
module the CLI's commands import except ``cli`` itself, whose consoles look at the terminal and
the environment as they are made — and forks for each command. The fork (no thread has been
started in the zygote, so it is safe) takes the command's environment, working directory and
arguments, points its stdout and stderr at pipes of its own, imports ``cli`` and runs
``starter.py`` itself as ``__main__`` (its ``os._exit`` included). What comes back is what a
subprocess gives: the exit code (minus the signal that killed it), stdout and stderr.

Run as a script (``python tests/cli_zygote.py SOCKET``) it is the zygote: it serves SOCKET
until its stdin closes (the test process that started it has ended).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARTER = ROOT / "starter.py"


def _preload() -> None:
    """Everything a command of starter.py imports, except cli/ (made fresh in each fork)."""
    import importlib

    for name in (
        "client.connect",
        "client.run",
        "client.start",
        "client.steer",
        "client.fork",
        "client.gc",
        "client.events",
        "client.listing",
        "client.outcome",
        "client.results",
        "client.workspace_files",
        "client.server_view",
        "client.workers",
        "client.handle",
        "workflows.leader",
        "rich.console",
        "rich.table",
        "rich.tree",
        "rich.live",
        "rich.markup",
        "rich.text",
        "argparse",
    ):
        importlib.import_module(name)
    assert sys.modules.keys().isdisjoint({"cli", "cli.render"}), "cli/ is made in each fork"


def _run_starter(request: dict[str, object]) -> None:
    """In the fork that is the command's process: run starter.py as ``python starter.py``
    would, and leave with its exit code."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(request["env"])  # type: ignore[arg-type]
        os.chdir(str(request["cwd"]))
        sys.argv = [str(STARTER), *request["args"]]  # type: ignore[misc]
        sys.path[0] = str(STARTER.parent)  # as `python starter.py` has it
        import runpy

        runpy.run_path(str(STARTER), run_name="__main__")  # ends in os._exit(main())
        code = 0
    except SystemExit as e:  # argparse, or a command's sys.exit
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, exit 1
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve_one(conn: socket.socket) -> None:
    """In a fork of the zygote, for one connection: read the request, run it in a fork of its
    own, send back its exit code and output. The asker closing the connection kills it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    reader = conn.makefile("rb")
    request = json.loads(reader.readline())
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        reader.close()
        conn.close()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (devnull, out_r, out_w, err_r, err_w):
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _run_starter(request)
    os.close(out_w)
    os.close(err_w)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    selector = selectors.DefaultSelector()
    selector.register(out_r, selectors.EVENT_READ)
    selector.register(err_r, selectors.EVENT_READ)
    selector.register(conn, selectors.EVENT_READ)
    open_pipes = 2
    while open_pipes:
        for key, _ in selector.select():
            if key.fileobj is conn:  # the asker gave up (its timeout): stop the command
                os.kill(pid, signal.SIGKILL)
                selector.unregister(conn)
                continue
            data = os.read(key.fd, 65536)
            if data:
                chunks[key.fd].append(data)
            else:
                selector.unregister(key.fd)
                open_pipes -= 1
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    answer = {
        "code": code,
        "out": base64.b64encode(b"".join(chunks[out_r])).decode(),
        "err": base64.b64encode(b"".join(chunks[err_r])).decode(),
    }
    try:
        conn.sendall(json.dumps(answer).encode() + b"\n")
    except OSError:
        pass


def serve(path: str) -> None:
    _preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the per-connection forks reap themselves
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is sys.stdin:  # the test process ended (or stopped us)
                os._exit(0)
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                code = 0
                try:
                    _serve_one(conn)
                except BaseException:  # noqa: BLE001
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            conn.close()


class Zygote:
    """One per test process, started on first use."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="xsky-zygote-")
        self.path = os.path.join(self._dir, "s")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__)), self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        assert self._proc.stdout is not None
        ready = self._proc.stdout.readline()
        assert ready == b"ready\n", f"the CLI zygote did not start: {ready!r}"

    def alive(self) -> bool:
        return self._proc.poll() is None

    async def run(
        self, args: list[str], env: Mapping[str, str], cwd: Path, timeout: float
    ) -> tuple[int, bytes, bytes]:
        """``starter.py ARGS`` with this environment and working directory: (exit code, or
        minus the signal that ended it; stdout; stderr)."""
        reader, writer = await asyncio.open_unix_connection(self.path)
        try:
            request = {"args": list(args), "env": dict(env), "cwd": str(cwd)}
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), timeout)
        finally:
            writer.close()  # (before an answer: the command is killed)
        assert line, "the CLI zygote's fork ended without an answer"
        answer = json.loads(line)
        return (
            answer["code"],
            base64.b64decode(answer["out"]),
            base64.b64decode(answer["err"]),
        )


_zygote: Zygote | None = None


def zygote() -> Zygote:
    global _zygote
    if _zygote is None or not _zygote.alive():
        _zygote = Zygote()
    return _zygote


if __name__ == "__main__":
    sys.path[0] = str(ROOT)
    serve(sys.argv[1])
