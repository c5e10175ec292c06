"""What a sandbox sees of the machine: an explicit list, nothing else.

The root of every sandbox is an empty tmpfs. Into it go, read-only, the system's program
and library folders (``/usr`` and the ``/bin``, ``/sbin``, ``/lib*`` beside it — as the
same symlinks when the system has merged them into ``/usr``) and a minimal ``/etc``:

- files written for the sandbox: ``passwd`` and ``group`` naming only root, the sandbox's
  ``agent`` user and ``nobody``; ``hosts`` (localhost); ``hostname``; a ``resolv.conf``
  stand-in (there is no DNS inside: names are resolved by the egress proxy, when a run may
  reach the network at all); ``nsswitch.conf``;
- from the host, read-only, what programs need to run and nothing that holds a secret or
  points elsewhere: certificates (``ssl/certs``, not ``ssl/private``), the dynamic
  linker's cache, Debian's ``alternatives`` links, locale and time zone, MIME and service
  tables, fonts, and the configuration folders of toolchains (``python3*``, ``java-*``,
  ``perl``).

Not there: the host's ``/etc`` (``shadow``, ``.env`` files, TLS keys, ``ssh``, ``sudoers``,
a ``gitconfig`` or ``npmrc`` with tokens), ``/home`` and ``/root``, ``/var``, ``/opt``,
``/srv``, ``/mnt``, ``/run`` (sockets of local services: databases, tmux, ssh-agent,
Docker), ``/sys`` (but the CPU topology programs read to count cores) and every folder
next to the workspace. The worker's settings may add read-only paths
(``security.read_only_paths``), for a toolchain outside ``/usr``.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

INSIDE_UID = 1000
INSIDE_GID = 1000
SANDBOX_HOME = "/tmp/home"

# The program and library folders: bound read-only, or recreated as the symlinks they are.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

# /etc entries copied in read-only when the host has them (globs allowed).
ETC_FROM_HOST = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "fonts",
    "gai.conf",
    "host.conf",
    "inputrc",
    "java-*",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "locale.conf",
    "localtime",
    "magic",
    "magic.mime",
    "mime.types",
    "netconfig",
    "os-release",
    "perl",
    "pki/ca-trust/extracted",
    "pki/tls/certs",
    "protocols",
    "python3",
    "python3.*",
    "redhat-release",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
    "xattr.conf",
    "xml",
)
# Chromium needs its own wrappers' configuration and fonts as well (the browser sandbox).
ETC_FOR_BROWSER = ("chromium", "chromium.d", "fonts")

_GENERATED = {
    "passwd": (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"agent:x:{INSIDE_UID}:{INSIDE_GID}:xsky agent:{SANDBOX_HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ),
    "group": f"root:x:0:\nagent:x:{INSIDE_GID}:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "hostname": "sandbox\n",
    # No name server is reachable inside; a proxy (when there is one) resolves names itself.
    "resolv.conf": (
        "# xsky sandbox: no DNS here. With network access, programs use the HTTP proxy in\n"
        "# $HTTPS_PROXY, which resolves and checks names itself.\n"
        "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
    ),
    "nsswitch.conf": (
        "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n"
        "protocols: files\nservices: files\nethers: files\nrpc: files\n"
    ),
}


ETC_PREFIX = "xsky-etc-"


def sweep_etc_folders(tmp: Path | None = None) -> list[Path]:
    """Remove the /etc copies of worker processes that are gone (a killed worker cannot remove
    its own): each is named for its process, ``xsky-etc-<pid>-…``. Returns what was removed."""
    removed = []
    for folder in (tmp or Path(tempfile.gettempdir())).glob(f"{ETC_PREFIX}*-*"):
        pid = folder.name.removeprefix(ETC_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@lru_cache(maxsize=2)
def etc_folder(browser: bool = False) -> Path:
    """The sandbox's /etc, made once per worker process: the written files, and copies of
    the allowed host entries (symbolic links kept as links). One bind mount instead of one
    per entry: each mount costs a sandbox start about a quarter of a millisecond. Removed when
    the process exits, or by the next worker if it is killed (named for its process)."""
    sweep_etc_folders()
    folder = Path(tempfile.mkdtemp(prefix=f"{ETC_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, folder, True)
    for pattern in ETC_FROM_HOST + (ETC_FOR_BROWSER if browser else ()):
        for source in sorted(glob.glob(os.path.join("/etc", pattern))):
            target = folder / os.path.relpath(source, "/etc")
            if target.exists() or target.is_symlink():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                if os.path.islink(source):
                    os.symlink(os.readlink(source), target)
                elif os.path.isdir(source):
                    shutil.copytree(source, target, symlinks=True, ignore_dangling_symlinks=True)
                elif os.path.isfile(source):
                    shutil.copy2(source, target)
            except OSError:
                continue  # unreadable or vanished: a sandbox does without it
    for name, text in _GENERATED.items():
        (folder / name).write_text(text)
    os.symlink("../proc/self/mounts", folder / "mtab")
    for dirpath, _dirnames, filenames in os.walk(folder):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o644)
    return folder


def system_args() -> list[str]:
    """bwrap arguments for the system folders: read-only binds, or the host's symlinks."""
    args: list[str] = []
    for folder in SYSTEM:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    # Programs count cores from here (glibc's get_nprocs, Node, Chromium); nothing else of /sys.
    if os.path.isdir("/sys/devices/system/cpu"):
        args += ["--ro-bind", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    return args


def etc_args(browser: bool = False) -> list[str]:
    """bwrap arguments for the minimal /etc (see the module docstring)."""
    return ["--ro-bind", str(etc_folder(browser)), "/etc"]
