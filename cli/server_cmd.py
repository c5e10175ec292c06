"""The local Temporal dev server and a background worker: ``server``, ``up``, ``down``."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cli.devserver import DevServer, is_listening, stop_pid
from cli.render import err, out
from xsky.config import Settings, load_settings
from xsky.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("server", help="start (or --stop) the local Temporal dev server")
    p.add_argument("--stop", action="store_true", help="stop the server this command started")
    p.add_argument(
        "--db", help="SQLite file for the server's state (default: $XSKY_HOME/temporal.db)"
    )
    p.add_argument("--ui-port", type=_port, help="Web UI port (default XSKY_UI_PORT or 8233)")
    p.set_defaults(handler=cmd_server)

    p = sub.add_parser(
        "up", help="start the server and a worker in the background, if they are not up"
    )
    p.set_defaults(handler=cmd_up)

    p = sub.add_parser("down", help="stop the worker and the server that `up` started")
    p.set_defaults(handler=cmd_down)


def _port(text: str) -> int:
    """A port number for argparse (1–65535), refused with the range otherwise."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1–65535)") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"{port} is not a port number: give one of 1–65535")
    return port


def _host_port(settings: Settings) -> tuple[str, int]:
    host, _, port = settings.address.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"TEMPORAL_ADDRESS={settings.address!r} should look like localhost:7233")
    return ("127.0.0.1" if host == "localhost" else host), int(port)


def _pid_file(settings: Settings, name: str) -> Path:
    return settings.home / f"{name}.pid"


def _read_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    if pid <= 1:
        # Not one process `up` started: kill(-1) signals every process we may, 0 our own
        # group, -N group N, 1 is init. A pid file is only a file in XSKY_HOME.
        path.unlink(missing_ok=True)
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        path.unlink(missing_ok=True)
        return None
    except PermissionError:
        pass
    if _zombie(pid) or not _ours(pid, path):  # killed, not yet reaped: not running
        path.unlink(missing_ok=True)
        return None
    return pid


# What the command line of the process a pid file names holds, when it is the one `up` started
# (a pid file outlives a reboot or a container's restart, and the pid goes to another process:
# `down` would stop that one).
_MARKS = {"server.pid": b"start-dev", "worker.pid": b"worker.py"}


def _ours(pid: int, path: Path) -> bool:
    mark = _MARKS.get(path.name)
    if mark is None:
        return True
    try:
        line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # (no /proc here: as before, the pid alone)
    # (empty for a moment while a process starts, and for a kernel thread: not told apart)
    return not line or mark in line


def _zombie(pid: int) -> bool:
    """A process that has ended and waits to be reaped (a signal 0 still reaches it)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def ensure_server(settings: Settings, db: str | None = None, ui_port: int | None = None) -> bool:
    """Start the dev server unless one answers already. True if it was started now."""
    host, port = _host_port(settings)
    if is_listening(host, port):
        _answers_as_temporal(settings)
        out.print(f"Temporal is already up at {settings.address} (Web UI {settings.ui_url})")
        return False
    running = _read_pid(_pid_file(settings, "server"))
    if running is not None:
        # Two dev servers on one database (a TEMPORAL_ADDRESS changed, the home kept) write
        # over each other's runs, and `down` then stops only the newer one.
        raise UsageError(
            f"this XSKY_HOME's Temporal server (pid {running}) is running at "
            f"{_server_address(running) or 'another address'}, not at {settings.address}, on "
            f"the same home ({settings.home})",
            "use that address (TEMPORAL_ADDRESS), stop it first (`starter.py down` with the "
            "address it was started with), or give this server its own XSKY_HOME",
        )
    if host not in ("127.0.0.1", "0.0.0.0"):
        raise UsageError(
            f"nothing answers at {settings.address}, and a local server cannot be started for a remote host"
        )
    # Made private: it holds the server's database (every run's history, results and context
    # values), logs and transcripts, which the server and the worker write readable by all.
    # A home that exists already keeps the mode its owner gave it.
    settings.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    server = DevServer(
        db_path=Path(db) if db else settings.home / "temporal.db",
        port=port,
        ui_port=ui_port or settings.ui_port,
        ip=host,
        log_path=settings.home / "temporal.log",
    )
    log_size = server.log_path.stat().st_size if server.log_path and server.log_path.exists() else 0
    try:
        server.start(detach=True)
    except (RuntimeError, TimeoutError) as e:
        server.stop(kill=True)  # (one that did not answer in time must not be left running)
        cause = _logged_cause(server.log_path, log_size)
        raise UsageError(
            f"{e}{cause}",
            # Two `up` at once on one home: the second server finds the database locked, and no
            # port is the matter (chaos15)
            "another `starter.py up` is starting this XSKY_HOME's server: wait for it, then "
            "`starter.py status` (or give this one its own XSKY_HOME)"
            if "SQLITE_BUSY" in cause or "database is locked" in cause
            else "pick another port (TEMPORAL_ADDRESS, XSKY_UI_PORT or --ui-port) if one is taken",
        ) from None
    assert server.process is not None
    _pid_file(settings, "server").write_text(str(server.process.pid))
    out.print(
        f"Temporal dev server started at {settings.address}, Web UI http://localhost:{ui_port or settings.ui_port}, "
        f"state in {server.db_path.resolve()} (log {(settings.home / 'temporal.log').resolve()})"
    )
    return True


def _answers_as_temporal(settings: Settings) -> None:
    """Something listens at the address: is it a Temporal server? (another program, or
    another server's HTTP port, was called "Temporal is already up" and the worker died)."""
    import asyncio
    from datetime import timedelta

    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

    from client.connect import connect_client

    async def ask() -> None:
        client = await connect_client(settings)
        await client.workflow_service.get_system_info(
            GetSystemInfoRequest(), timeout=timedelta(seconds=5)
        )

    try:
        with ThreadPoolExecutor(1) as pool:  # (`demo` calls this inside its event loop)
            pool.submit(lambda: asyncio.run(asyncio.wait_for(ask(), 10))).result()
    except Exception as e:  # noqa: BLE001 - whatever it is, it is not a server to use
        raise UsageError(
            f"something listens at {settings.address}, but it is not a Temporal server "
            f"answering there ({str(e).splitlines()[0][:200] if str(e) else type(e).__name__})",
            "set TEMPORAL_ADDRESS to the Temporal server's gRPC address, or to a free port for "
            "`starter.py up` to start one at",
        ) from None


def _server_address(pid: int) -> str | None:
    """The address a dev server we started listens at (its command line's --ip and --port)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    flags = dict(zip(argv, argv[1:], strict=False))
    port = flags.get("--port")
    return f"{flags.get('--ip', 'localhost')}:{port}" if port else None


def _logged_cause(log: Path | None, since: int = 0) -> str:
    """The dev server's own last error line (``can't set UI port -1: …``), if this start wrote
    one (the log is appended to: from byte ``since`` on)."""
    try:
        with open(log, "rb") if log else contextlib.nullcontext(None) as fh:
            if fh is None:
                return ""
            fh.seek(since)
            lines = fh.read().decode(errors="replace").splitlines()[-40:]
    except OSError:
        return ""
    said = [line for line in lines if "error" in line.lower() or "can't" in line.lower()]
    return f": {said[-1].strip()[:300]}" if said else ""


def cmd_server(args: argparse.Namespace) -> int:
    settings = load_settings()
    if args.stop:
        pid = _read_pid(_pid_file(settings, "server"))
        if pid is None:
            out.print(
                f"no server started by xsky is running (no live pid in {_pid_file(settings, 'server')})"
            )
            return 0
        stop_pid(pid)
        _pid_file(settings, "server").unlink(missing_ok=True)
        out.print(
            f"stopped the Temporal dev server (pid {pid}); its state stays in {settings.home / 'temporal.db'}"
        )
        return 0
    ensure_server(settings, args.db, args.ui_port or settings.ui_port)
    return 0


def ensure_worker(
    settings: Settings, timeout: float = 60.0, user_settings: Path | None = None
) -> bool:
    """Start ``worker.py`` in the background unless ours is running. True if started now.

    ``user_settings``: the settings file the worker decides security with (its
    ``XSKY_USER_SETTINGS``), for a worker of the demo's own."""
    pid_path = _pid_file(settings, "worker")
    pid = _read_pid(pid_path)
    if pid is not None:
        serves = _worker_serves(pid)
        if serves is not None and serves != _serves(settings):
            # (its queue's runs are not this one's: `run` said no worker serves, `up` that one
            # runs, and round again)
            raise UsageError(
                f"this XSKY_HOME's worker (pid {pid}) serves task queue '{serves[2]}' at "
                f"{serves[0]} (namespace {serves[1]}), not '{settings.task_queue}' at "
                f"{settings.address} (namespace {settings.namespace})",
                "stop it (`starter.py down` with its settings) and `up` again, or give this "
                "queue its own XSKY_HOME",
            )
        out.print(f"the worker is already running (pid {pid}, log {settings.home / 'worker.log'})")
        if _reads_old_demo_settings(pid, settings):
            err.print(
                "note: this worker was started by an earlier `demo` with the demo's own settings "
                f"file ({settings.home / 'demo' / 'settings.json'}): your own rules are not applied "
                "to its runs; `starter.py down` then `starter.py up` starts one that reads them"
            )
        return False
    if settings.store is None and (others := _other_workers(settings)):
        # Started elsewhere (another XSKY_HOME's `up`, a `worker.py` by hand): with a local
        # store each keeps what it runs, and the runs would be split between the two.
        err.print(
            f"note: a worker this home did not start already serves task queue "
            f"'{settings.task_queue}' at {settings.address} ({', '.join(others[:3])}); if its "
            f"XSKY_HOME differs from this one ({settings.home}), runs are split between them and "
            "`log` or `files` here will not find what the other ran: use one home, or give this "
            "one its own queue (XSKY_TASK_QUEUE) or server (TEMPORAL_ADDRESS, XSKY_UI_PORT)"
        )
    log_path = settings.home / "worker.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start_size = log_path.stat().st_size if log_path.exists() else 0
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "worker.py")],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=os.getcwd(),
            env={**os.environ, "XSKY_USER_SETTINGS": str(user_settings)} if user_settings else None,
        )
    pid_path.write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            # (what it said as it stopped — a store that refuses it, another host's skills
            # home — is the worker's last lines, "worker.py: …": said here, not only in the log)
            with open(log_path, "rb") as fh:
                fh.seek(start_size)
                said = fh.read().decode(errors="replace")
            why = said[said.rfind("worker.py: ") :].strip() if "worker.py: " in said else ""
            raise UsageError(
                f"the worker exited at once (status {proc.returncode}); see {log_path}"
                + (f"\n{why}" if why else "")
            )
        with open(log_path, "rb") as fh:
            fh.seek(start_size)
            if b"serving" in fh.read():
                out.print(f"worker started (pid {proc.pid}, log {log_path.resolve()})")
                return True
        time.sleep(0.2)
    raise UsageError(f"the worker did not report ready within {timeout:g}s; see {log_path}")


def _serves(settings: Settings) -> tuple[str, str, str]:
    return (settings.address, settings.namespace, settings.task_queue)


def _environ(pid: int) -> dict[str, str] | None:
    """The environment process ``pid`` was started with (None: not readable here)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    if raw == [b""]:  # a process in the midst of starting shows none for a moment: not known yet
        return None
    return dict(item.decode(errors="replace").partition("=")[::2] for item in raw if b"=" in item)


def _worker_serves(pid: int) -> tuple[str, str, str] | None:
    """(address, namespace, task queue) of worker ``pid``, from the environment it was started
    with (None: not readable here)."""
    environ = _environ(pid)
    if environ is None:
        return None
    try:
        return _serves(load_settings(environ))
    except Exception:  # noqa: BLE001 - a setting it was started with that no longer reads
        return None


def _reads_old_demo_settings(pid: int, settings: Settings) -> bool:
    """Was worker ``pid`` started by a `demo` before v0.11.7, with the demo's settings file?"""
    environ = _environ(pid)
    demo = str(settings.home / "demo" / "settings.json")
    return environ is not None and environ.get("XSKY_USER_SETTINGS") == demo


def _other_workers(settings: Settings) -> list[str]:
    """The identities of the live workers polling this home's leader queue (none of them
    this home's: it has no worker running); [] when the server cannot say."""
    import asyncio

    from temporalio.api.enums.v1 import TaskQueueType

    from client.connect import connect_client
    from client.workers import live_pollers

    async def ask() -> list[str]:
        client = await connect_client(settings)
        kind = TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
        return [p.identity for p in await live_pollers(client, settings, settings.task_queue, kind)]

    def asked() -> list[str]:  # in a thread of its own: `demo` calls this inside its event loop
        return asyncio.run(asyncio.wait_for(ask(), 10))

    try:
        with ThreadPoolExecutor(1) as pool:
            found = pool.submit(asked).result()
    except Exception:  # noqa: BLE001 - a note only: the worker starts either way
        return []
    # The server lists a poller for a while after its worker stopped: one of this machine
    # that is gone (this home's own worker, crashed or stopped a moment ago) is no other.
    return [i for i in found if not _gone_here(i)]


def _gone_here(identity: str) -> bool:
    """Is ``identity`` (the SDK's ``pid@host``) a process of this machine that has ended?"""
    pid, _, host = identity.partition("@")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def cmd_up(args: argparse.Namespace) -> int:
    settings = load_settings()
    _check_moved(settings)
    ensure_server(settings)
    ensure_worker(settings)
    return 0


def _arg_after(pid: int, flag: str) -> str | None:
    """The value of ``flag`` on process ``pid``'s command line (None: not there, or no /proc)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    return words[words.index(flag) + 1] if flag in words[:-1] else None


def _check_moved(settings: Settings) -> None:
    """The processes this home's pid files name, started before the home was moved (walk10:
    `mv .xsky elsewhere` while they ran): the server keeps its database open where it went, but
    SQLite's journal sits beside the path it was given — every write fails ("attempt to write a
    readonly database"), runs cannot start ("shard status unknown") — while `up` said "Temporal
    is already up"; and the worker writes the runs' files under the home it was given."""
    home = settings.home.resolve()
    _check_moved_worker(settings, home)
    pid = _read_pid(_pid_file(settings, "server"))
    db = _arg_after(pid, "--db-filename") if pid is not None else None
    if pid is not None and db is not None and not Path(db).exists():
        raise UsageError(
            f"this home's Temporal server (pid {pid}) was started with its state in {db}, which "
            f"is no longer there — was XSKY_HOME moved (now {home}) while it ran? It cannot write "
            "its database (no run starts or moves on)",
            "`starter.py down` then `starter.py up` (its runs are kept: the database moved with "
            "the home)",
        )


def _check_moved_worker(settings: Settings, home: Path) -> None:
    pid = _read_pid(_pid_file(settings, "worker"))
    environ = _environ(pid) if pid is not None else None
    if pid is None or environ is None:
        return
    try:
        given = load_settings(environ).home
    except Exception:  # noqa: BLE001 - a setting it was started with that no longer reads
        return
    if not given.is_absolute():
        with contextlib.suppress(OSError):
            given = Path(os.readlink(f"/proc/{pid}/cwd")) / given
    if not given.exists():
        err.print(
            f"note: this home's worker (pid {pid}) was started with its home in {given}, which is "
            f"no longer there — was XSKY_HOME moved (now {home})? It writes the runs' files, logs "
            "and results there, where `files`, `log` and `result` here do not look: "
            "`starter.py down` then `starter.py up`"
        )


def cmd_down(args: argparse.Namespace) -> int:
    settings = load_settings()
    home = settings.home.resolve()
    for name in ("worker", "server"):
        pid = _read_pid(_pid_file(settings, name))
        if pid is None:
            out.print(f"{name}: not running (nothing started by `up` with this home, {home})")
            if name == "server" and is_listening(*_host_port(settings)):
                # (`up` run from another folder, or with another XSKY_HOME, keeps its pids there:
                # "not running" alone read as if nothing were left behind)
                others = _other_workers(settings)
                workers = f" and workers poll its queue ({', '.join(others[:3])})" if others else ""
                out.print(
                    f"note: a Temporal server answers at {settings.address}{workers}, which this "
                    "home did not start — if `up` started it in another folder or with another "
                    "XSKY_HOME (the default home, .xsky, is the folder's own), run `starter.py "
                    "down` there, or with that XSKY_HOME"
                )
            continue
        stop_pid(pid)
        _pid_file(settings, name).unlink(missing_ok=True)
        out.print(f"{name}: stopped (pid {pid})")
    return 0
