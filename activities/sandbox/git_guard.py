"""Nothing a sandbox plants in a git repository runs later on a person's side.

``git status``, ``diff`` and ``commit`` feel safe to a person, yet a repository's
``.git/config`` can make them run programs (``core.fsmonitor``, ``core.hooksPath``,
``core.pager``, a ``diff`` or ``filter`` driver, an ``!alias``) and ``.git/hooks`` holds
programs ``commit`` and ``checkout`` run. Two guards, for the two ways a repository gets
into a workspace:

- a repository that is there when a command starts has its ``config`` and ``hooks`` bound
  read-only inside the sandbox (:func:`activities.sandbox.bwrap.protected_paths`);
- a repository a command makes or changes (``git init``, ``git clone``, a planted
  ``.git`` file, link or ``commondir``, a bare repository, anywhere) is checked when the command
  has ended (every process of the sandbox is gone by then, so nothing races): its config
  keeps only keys from an allow-list of keys that run nothing, and hooks that are not
  git's ``.sample`` files lose their execute bits. What was removed is reported, so the
  agent and the person see it.

A root worker's sandbox user also owns what it writes, so a person's git refuses such a
repository outright ("detected dubious ownership") until they trust it with
``safe.directory`` — git's own answer to the same threat.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from activities.sandbox import freeze

# Files in a git folder that git reads settings or programs from (``config.worktree`` with
# extensions.worktreeConfig; ``hooks/`` is a folder).
CONFIGS = ("config", "config.worktree")
# (Pointers git follows from where a person runs it to another git folder, whose config then
# counts: a ``.git`` file (``gitdir: …``) or link, a worktree's or submodule's ``commondir``:
# see repositories.)

# section (lower case) → keys (lower case) that only store data. A subsection name is
# allowed where shown with "*": remote "origin", branch "main".
SAFE_KEYS: dict[str, frozenset[str]] = {
    "core": frozenset(
        {
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
            "autocrlf",
            "eol",
            "safecrlf",
            "quotepath",
            "compression",
            "loosecompression",
            "bigfilethreshold",
            "sparsecheckout",
            "sparsecheckoutcone",
            "splitindex",
            "untrackedcache",
            "checkstat",
            "trustctime",
            "sharedrepository",
            "abbrev",
        }
    ),
    "user": frozenset({"name", "email"}),
    "author": frozenset({"name", "email"}),
    "committer": frozenset({"name", "email"}),
    "init": frozenset({"defaultbranch"}),
    "remote.*": frozenset(
        {
            "url",
            "pushurl",
            "fetch",
            "push",
            "tagopt",
            "prune",
            "mirror",
            "promisor",
            "partialclonefilter",
        }
    ),
    "branch.*": frozenset({"remote", "merge", "rebase", "pushremote", "description"}),
    "extensions": frozenset(
        {"objectformat", "worktreeconfig", "refstorage", "partialclone", "preciousobjects"}
    ),
    "pull": frozenset({"rebase", "ff"}),
    "push": frozenset({"default", "autosetupremote", "followtags"}),
    "fetch": frozenset({"prune", "prunetags"}),
    "merge": frozenset({"ff", "conflictstyle"}),
    "rebase": frozenset({"autostash", "autosquash"}),
    "commit": frozenset({"gpgsign", "verbose"}),
    "status": frozenset({"showuntrackedfiles", "short", "branch"}),
    "gc": frozenset({"auto", "autodetach", "autopacklimit"}),
    "pack": frozenset({"threads", "windowmemory"}),
    "index": frozenset({"version"}),
    "feature": frozenset({"manyfiles"}),
    "log": frozenset({"date", "decorate"}),
    "diff": frozenset({"renames", "algorithm", "mnemonicprefix", "noprefix"}),
    "advice.*": frozenset(),
    "advice": frozenset(),
    "color": frozenset(),
    "lfs": frozenset({"repositoryformatversion"}),
}
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$)")


def _allowed(section: str, subsection: str | None, key: str) -> bool:
    name = section.lower()
    if "." in name:  # the old [section.sub] spelling
        name, _, subsection = name.partition(".")
    if name in ("advice", "color"):
        return True
    keys = SAFE_KEYS.get(f"{name}.*" if subsection is not None else name)
    return keys is not None and key.lower() in keys


def clean_config(text: str) -> tuple[str, list[str]]:
    """(``text`` with only allow-listed keys, the keys removed as ``section.key``).

    Line-based, like git's own format: a section header, then ``key = value`` lines
    (continued with a trailing backslash). ``include``/``includeIf`` sections, every
    driver and alias, and anything unknown go."""
    out: list[str] = []
    removed: list[str] = []
    section, subsection = "", None
    continued = keep_line = False
    for line in text.splitlines(keepends=True):
        if continued:
            continued = line.rstrip("\r\n").endswith("\\")
            if keep_line:
                out.append(line)
            continue
        header = _SECTION.match(line)
        if header:
            section, subsection, rest = header.group(1), header.group(2), header.group(3)
            out.append(
                f"[{section}" + (f' "{subsection}"' if subsection is not None else "") + "]\n"
            )
            line = rest + "\n" if rest.strip() else ""
            if not line:
                continue
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            out.append(line)
            continue
        key = _KEY.match(line)
        keep_line = bool(key) and _allowed(section, subsection, key.group(1) if key else "")
        if keep_line:
            out.append(line)
        else:
            where = section + (f'."{subsection}"' if subsection is not None else "")
            removed.append(f"{where}.{key.group(1) if key else stripped[:40]}")
        continued = line.rstrip("\r\n").endswith("\\")
    return "".join(out), removed


@dataclass(frozen=True)
class _Folder:
    """What the walk needs of one folder, kept while the folder's ctime stays: its subfolders,
    whether git would take it for a git folder, and its pointers (``.git`` files and links,
    a git folder's ``commondir``) as ``(name, is a link)`` — read again every time, since
    writing into a file changes no folder's ctime."""

    stamp: tuple[int, int, int]
    subfolders: tuple[str, ...]
    git: bool
    pointers: tuple[tuple[str, bool], ...]
    trusted: bool  # its ctime was over a second old when it was read (git's "racy" rule)


# Per workspace, the folders as last seen: a command that changed a few folders of a large
# workspace costs a stat per folder, not a read of every entry. A folder's ctime changes with
# every name added, removed or renamed in it (and, unlike its mtime, cannot be set back from
# inside the sandbox), so a folder whose ctime stayed holds the same names.
_SEEN: dict[str, dict[str, _Folder]] = {}
_SEEN_LOCK = threading.Lock()  # sweeps of several workspaces run in threads at once
_SEEN_FOLDERS = 200_000  # folders remembered of one workspace: beyond, it is read whole
_SEEN_ALL = 600_000  # and of all of them (a few tens of MB at most)
# A folder changed this recently may change again within the same tick of a coarse clock
# without its ctime moving: it is read again next time, whatever its ctime says.
_RACY_NS = 1_000_000_000


def _folder(path: str, seen: dict[str, _Folder]) -> _Folder | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    stamp = (info.st_dev, info.st_ino, info.st_ctime_ns)
    known = seen.get(path)
    if known is not None and known.stamp == stamp and known.trusted:
        return known
    read_at = time.time_ns()
    subfolders: list[str] = []
    pointers: list[tuple[str, bool]] = []
    names: set[str] = set()
    try:
        with os.scandir(path) as it:
            for entry in it:
                names.add(entry.name)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_link = entry.is_symlink()
                except OSError:
                    continue
                if is_dir:
                    subfolders.append(entry.name)
                elif entry.name in (".git", "commondir"):
                    pointers.append((entry.name, is_link))
    except OSError:
        return None
    # What git takes for a git folder: HEAD beside objects or a commondir. (A common folder a
    # commondir names is cleaned through that pointer: a project's own folders named objects
    # and refs are no git folder.)
    git = "HEAD" in names and ("objects" in names or "commondir" in names)
    trusted = info.st_ctime_ns < read_at - _RACY_NS
    folder = _Folder(stamp, tuple(subfolders), git, tuple(pointers), trusted)
    seen[path] = folder
    return folder


def _inside(path: str, root: str) -> str | None:
    """``path`` with every link resolved, when it is inside ``root`` (itself resolved)."""
    real = os.path.realpath(path)
    return real if real == root or real.startswith(root + os.sep) else None


def repositories(workspace: Path) -> tuple[list[Path], list[str]]:
    """(the git folders of the workspace, what was removed on the way).

    Every folder is looked at, however deep or however named (a repository planted under
    ``node_modules/``, four levels down or after 5,000 files is found as well); a folder
    unchanged since the last sweep costs one stat (``_SEEN``). A git folder is a ``.git``
    folder, or any folder git would take for one (``HEAD`` beside ``objects`` or
    ``commondir``: a bare repository, a submodule's or a worktree's). A ``.git`` file or
    link, and a ``commondir``, that lead out of the workspace are removed: what git would
    read through them is not the agent's to write, and a repository there is not the
    workspace's. One that leads inside is found by the walk itself."""
    root = os.path.realpath(workspace)
    with _SEEN_LOCK:
        seen = _SEEN.pop(root, {})
    current: dict[str, _Folder] = {}
    found: list[str] = []
    notes: list[str] = []
    stack = [root]
    while stack:
        path = stack.pop()
        folder = _folder(path, seen)
        if folder is None:
            continue
        current[path] = folder
        if folder.git or os.path.basename(path) == ".git":
            found.append(path)
        for name, is_link in folder.pointers:
            if name == "commondir" and not folder.git:
                continue
            pointer = os.path.join(path, name)
            if name == ".git":
                target = _git_pointer(pointer, is_link, root)
            else:
                target = None if is_link else _commondir(pointer, path)
            inside = None if target is None else _inside(target, root)
            if inside is not None:
                # Cleaned wherever it stands when git would use it (config and hooks are read
                # there), whether or not the walk takes it for a git folder of its own.
                if _git_would_use(inside, common=name == "commondir"):
                    found.append(inside)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(pointer)
                what = (
                    f"a .git {'link' if is_link else 'file'} that leads"
                    if name == ".git"
                    else "it leads"
                )
                notes.append(f"{_rel(pointer, root)}: removed ({what} out of the workspace)")
        stack.extend(os.path.join(path, sub) for sub in folder.subfolders)
    with _SEEN_LOCK:
        if len(current) <= _SEEN_FOLDERS:
            _SEEN[root] = current
        # the oldest remembered workspaces go first, to keep the folders remembered in bounds
        while _SEEN and sum(map(len, _SEEN.values())) > _SEEN_ALL:
            _SEEN.pop(next(iter(_SEEN)), None)
    return [Path(f) for f in sorted(set(found))], notes


def _git_would_use(path: str, common: bool) -> bool:
    """Would git take ``path`` for a git folder (HEAD beside objects or a commondir), or with
    ``common`` for a common folder (objects/ and refs/)?"""

    def has(name: str, folder: bool) -> bool:
        try:
            mode = os.lstat(os.path.join(path, name)).st_mode
        except OSError:
            return False
        return stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)

    if common:
        return has("objects", True) and has("refs", True)
    return has("HEAD", False) and (has("objects", True) or has("commondir", False))


def _read_small(path: str) -> bytes | None:
    """The first 4 KiB of a regular file, read without following a link or waiting on a FIFO
    or a device (an agent may plant either where git looks); None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _git_pointer(path: str, is_link: bool, root: str) -> str | None:
    """Where a ``.git`` link or file leads (None: nowhere git would follow). A link to a
    regular file is a gitfile, as git reads it; a gitfile is read as git reads it: "gitdir: "
    at its first byte, the rest less its trailing line ends (a line break inside is kept)."""
    if is_link:
        real = os.path.realpath(path)
        if not os.path.isfile(real) or _inside(real, root) is None:
            return real  # a folder, nothing, or out of the workspace (removed unread)
        path = real  # a file of the workspace: a gitfile, as git reads it
    data = _read_small(path)
    if data is None or not data.startswith(b"gitdir: "):
        return None
    where = data[len(b"gitdir: ") :].rstrip(b"\r\n").decode("utf-8", errors="surrogateescape")
    return os.path.join(os.path.dirname(path), where) if where else None


def _commondir(path: str, gitdir: str) -> str | None:
    data = _read_small(path)
    text = data.decode("utf-8", errors="replace").strip() if data else ""
    return os.path.join(gitdir, text) if text else None


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root)


def sweep(workspace: Path) -> list[str]:
    """Neutralise what a command left in repositories of the workspace; what was done. Other
    agents' processes in the same workspace are stopped meanwhile (activities/sandbox/freeze):
    nothing plants a repository behind the walk, or swaps a config for a link under it."""
    with freeze.frozen(workspace):
        return _sweep(workspace)


def _sweep(workspace: Path) -> list[str]:
    git_folders, notes = repositories(workspace)
    root = os.path.realpath(workspace)
    for git in git_folders:
        rel = _rel(str(git), root)
        for name in CONFIGS:
            notes += _clean(git / name, f"{rel}/{name}")
        hooks = git / "hooks"
        if hooks.is_symlink():
            hooks.unlink()
            notes.append(f"{rel}/hooks: removed (a symbolic link)")
            continue
        if not hooks.is_dir():
            continue
        for entry in os.scandir(hooks):
            if entry.name.endswith(".sample"):
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    continue  # git runs files named for hooks, never a folder
                if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
                    os.unlink(entry.path)
                    notes.append(f"{rel}/hooks/{entry.name}: removed (not a regular file)")
                elif mode & 0o111:
                    os.chmod(entry.path, mode & ~0o111 & 0o7777)
                    notes.append(f"{rel}/hooks/{entry.name}: no longer executable")
            except OSError as e:  # gone meanwhile, or not ours to change: said, never raised
                notes.append(f"{rel}/hooks/{entry.name}: left as it is ({e.strerror or e})")
    return notes


def _clean(config: Path, shown: str) -> list[str]:
    """One config file of a git folder with only the keys that run nothing."""
    try:
        info = os.lstat(config)
    except OSError:
        return []
    if not stat.S_ISREG(info.st_mode):  # a link or a device where git reads its config
        config.unlink()
        return [f"{shown}: removed (not a regular file)"]
    text = config.read_text(encoding="utf-8", errors="replace")
    cleaned, removed = clean_config(text)
    if not removed:
        return []
    _replace(config, cleaned, info)
    return [f"{shown}: removed {', '.join(removed)}"]


def _replace(path: Path, text: str, info: os.stat_result) -> None:
    """Write ``text`` over the regular file ``path`` (whose lstat is ``info``), as the same owner
    and mode but never executable.

    The folder is the agent's: a fixed temporary name could be a link it planted there, and
    writing through it would overwrite a host file as the worker's user. So the temporary file
    is made new (``mkstemp``: O_CREAT|O_EXCL, a random name, never a link followed), its owner
    and mode set on the open descriptor, and it is renamed over ``path`` (a rename replaces
    a link itself, never its target)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".xsky-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fchown(fh.fileno(), info.st_uid, info.st_gid)
            os.fchmod(fh.fileno(), stat.S_IMODE(info.st_mode) & ~0o111)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
