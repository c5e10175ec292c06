"""Nothing a sandbox plants in a git repository runs later on a person's side.

``git status``, ``diff`` and ``commit`` feel safe to a person, yet a repository's
``.git/config`` can make them run programs (``core.fsmonitor``, ``core.hooksPath``,
``core.pager``, a ``diff`` or ``filter`` driver, an ``!alias``) and ``.git/hooks`` holds
programs ``commit`` and ``checkout`` run. Two guards, for the two ways a repository gets
into a workspace:

- a repository that is there when a command starts has its ``config`` and ``hooks`` bound
  read-only inside the sandbox (:func:`activities.sandbox.bwrap.protected_paths`);
- a repository a command makes (``git init``, ``git clone``) is checked when the command
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
from pathlib import Path

MAX_ENTRIES = 5000  # folders looked at per sweep: a workspace of 100k files costs no more
MAX_DEPTH = 3
SKIP = frozenset(
    {"node_modules", ".venv", "venv", "__pycache__", "target", ".tox", "dist", "build"}
)

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


def repositories(workspace: Path) -> list[Path]:
    """``.git`` folders in the workspace, to a few levels down (bounded)."""
    found: list[Path] = []
    seen = 0
    level = [workspace]
    for _depth in range(MAX_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > MAX_ENTRIES:
                    return found
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if entry.name == ".git":
                    found.append(Path(entry.path))
                elif entry.name not in SKIP and not entry.name.startswith("."):
                    below.append(Path(entry.path))
        level = below
    return found


def sweep(workspace: Path) -> list[str]:
    """Neutralise what a command left in repositories of the workspace; what was done."""
    notes: list[str] = []
    for git in repositories(workspace):
        rel = git.relative_to(workspace)
        config = git / "config"
        try:
            info = os.lstat(config)
        except OSError:
            info = None
        if info is not None and stat.S_ISREG(info.st_mode):
            text = config.read_text(encoding="utf-8", errors="replace")
            cleaned, removed = clean_config(text)
            if removed:
                _replace(config, cleaned, info)
                notes.append(f"{rel}/config: removed {', '.join(removed)}")
        elif info is not None:  # a link or a device where git reads its config: away with it
            config.unlink()
            notes.append(f"{rel}/config: removed (not a regular file)")
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
            except OSError:
                continue
            if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
                os.unlink(entry.path)
                notes.append(f"{rel}/hooks/{entry.name}: removed (not a regular file)")
            elif mode & 0o111:
                os.chmod(entry.path, mode & ~0o111 & 0o7777)
                notes.append(f"{rel}/hooks/{entry.name}: no longer executable")
    return notes


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
