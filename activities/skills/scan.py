"""Transcripts → trajectory views → atoms on disk: the scan, render and commit steps.

- :func:`scan` is a tick's only work when nothing changed: one ``stat`` per transcript,
  compared with the cursors in the store; only files that grew are opened, and only their
  appended bytes are read (to end the delta on a complete line).
- :func:`render_delta` parses a delta's bytes with its source's adapter, continuing from
  the parse state saved at the cursor, redacts, and stages the view text it will append.
- :func:`commit_delta` is the only writer of views, indexes, atoms and cursors: in one
  SQLite transaction it checks the cursor is still at the delta's start (compare and
  swap), truncates what a crashed attempt may have half-appended, writes and fsyncs the
  files, and only then advances the cursor. A delta is thereby committed exactly once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities.skills.store import FileRow, SkillStore
from xsky.skills.atoms import AtomTask, atom_id, atom_number
from xsky.skills.layout import atom_path, index_path, md_path, staging_dir, tasks_dir
from xsky.skills.runs import (
    CommitResult,
    DeltaRef,
    LaneSummary,
    RenderResult,
    ScanInput,
    ScanResult,
)
from xsky.skills.sources import Source
from xsky.skills.trajectory import RENDER_VERSION, header, render, traj_id
from xsky.skills.transcripts import KIND_TAG, FileInfo, ParseState, adapter_for

HEAD_BYTES = 64 * 1024  # read from a new file to name it (cwd, session id, model)
HEAD_FINGERPRINT = 4096  # bytes that identify a file across renames
STAGING_MAX_AGE = 24 * 3600.0


# -- discovery -------------------------------------------------------------------------------


def _jsonl(folder: Path, prefix: str = "") -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if (
                    entry.name.endswith(".jsonl")
                    and entry.name.startswith(prefix)
                    and entry.is_file(follow_symlinks=False)
                ):
                    yield entry
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return


def _dirs(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    yield entry
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return


def discover(source: Source) -> Iterator[tuple[os.DirEntry[str], bool]]:
    """(file, is a Claude Code subagent file) for every transcript under a source's root.

    Symlinks are not followed: a transcript folder is not a way to read other files.
    """
    root = source.root
    if source.kind == "claude-code":
        for project in _dirs(root):
            yield from ((e, False) for e in _jsonl(Path(project.path)))
            for session in _dirs(Path(project.path)):
                yield from ((e, True) for e in _jsonl(Path(session.path) / "subagents"))
    elif source.kind == "codex":
        sessions = root / "sessions"
        if not sessions.is_dir() and root.name in ("sessions", "archived_sessions"):
            sessions = root
        for dirpath, dirnames, _ in os.walk(sessions):
            dirnames.sort()
            yield from ((e, False) for e in _jsonl(Path(dirpath), "rollout-"))
        yield from ((e, False) for e in _jsonl(root / "archived_sessions"))
    elif source.kind == "xsky":
        for run in _dirs(root):
            yield from ((e, False) for e in _jsonl(Path(run.path)))


# -- the scan --------------------------------------------------------------------------------


@dataclass
class _Candidate:
    path: str
    kind: str
    subagent: bool
    size: int
    mtime_ns: int
    dev: int
    ino: int
    row: FileRow | None


def delta_end(path: str, start: int, size: int, max_bytes: int, settled: bool) -> int | None:
    """Where a delta from ``start`` ends: after the last complete line within ``max_bytes``
    (a longer single line is taken whole); None when only a partial last line is there.
    A partial last line that is a whole JSON object is taken once the file has ``settled``."""
    with open(path, "rb") as f:
        hi = min(size, start + max_bytes)
        pos = hi
        while pos > start:
            lo = max(start, pos - 65536)
            f.seek(lo)
            chunk = f.read(pos - lo)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                return lo + nl + 1
            pos = lo
        f.seek(hi)
        at = hi
        while at < size:  # one line longer than max_bytes: find its end
            chunk = f.read(65536)
            if not chunk:
                break
            nl = chunk.find(b"\n")
            if nl >= 0:
                return at + nl + 1
            at += len(chunk)
        if settled:
            f.seek(start)
            tail = f.read(size - start)
            try:
                if isinstance(json.loads(tail), dict):
                    return size
            except ValueError:
                pass
    return None


def scan(home: Path, sources: list[Source], inp: ScanInput, clock: Any = time.time) -> ScanResult:
    """Deltas to process, oldest-known files first; cheap when nothing changed."""
    started = time.perf_counter()
    result = ScanResult()
    store = SkillStore(home)
    try:
        known = store.files()
        seen: set[str] = set()
        candidates: list[_Candidate] = []
        scanned_kinds: set[str] = set()
        for source in sources:
            if not source.root.is_dir():
                if source.origin != "default":
                    result.problems.append(
                        f"{source.label()}: no such folder (registered in {source.origin}); "
                        f"fix the path or `starter.py skills remove-source {source.kind} {source.root}`"
                    )
                continue
            scanned_kinds.add(source.kind)
            for entry, subagent in discover(source):
                path = entry.path
                if path in seen:
                    continue
                seen.add(path)
                st = entry.stat(follow_symlinks=False)
                result.files += 1
                row = known.get(path)
                if row is not None:
                    if row.status in ("truncated", "replaced"):
                        continue  # no longer followed (said so when it happened)
                    if st.st_size == row.cursor and row.status == "active" and row.ino == st.st_ino:
                        continue
                    if row.ino != st.st_ino or row.dev != st.st_dev or not _same_file(row, path):
                        _retire_replaced(
                            store, row, result
                        )  # a new file at an old path: a new trajectory
                        row = None
                    elif st.st_size < row.cursor:
                        store.db.execute(
                            "UPDATE files SET status = 'truncated', size = ? WHERE path = ?",
                            (st.st_size, path),
                        )
                        result.problems.append(
                            f"{path} shrank below what was already read ({row.cursor} bytes); "
                            "it is no longer followed (its trajectory and atoms stay)"
                        )
                        continue
                    elif (
                        row.waiting
                        and st.st_size == row.size
                        and st.st_mtime_ns == row.mtime_ns
                        and clock() - st.st_mtime_ns / 1e9 < inp.settle_seconds
                    ):
                        result.waiting += 1
                        continue
                candidates.append(
                    _Candidate(
                        path,
                        source.kind,
                        subagent,
                        st.st_size,
                        st.st_mtime_ns,
                        st.st_dev,
                        st.st_ino,
                        row,
                    )
                )
        _moves_and_gone(store, known, seen, scanned_kinds, candidates, result)
        _collect(store, candidates, inp, clock, result)
        store.set_meta(
            "last_scan",
            {
                "at": clock(),
                "files": result.files,
                "deltas": len(result.deltas) + result.remaining,
                "seconds": round(time.perf_counter() - started, 4),
            },
        )
    finally:
        store.close()
    _clean_staging(home, clock())
    result.seconds = round(time.perf_counter() - started, 4)
    return result


def head_of(path: str, size: int) -> str:
    """``<n>:<sha256 of the first n bytes>``: which file this is, whatever its name or inode."""
    n = min(HEAD_FINGERPRINT, size)
    with open(path, "rb") as f:
        return f"{n}:{hashlib.sha256(f.read(n)).hexdigest()}"


def _same_file(row: FileRow, path: str) -> bool:
    if not row.head:
        return True  # recorded before fingerprints existed
    n = int(row.head.split(":", 1)[0])
    try:
        return head_of(path, n) == row.head
    except OSError:
        return False


def _retire_replaced(store: SkillStore, row: FileRow, result: ScanResult) -> None:
    store.db.execute(
        "UPDATE files SET path = ?, status = 'replaced' WHERE path = ?",
        (f"{row.path}#replaced-{row.ino}", row.path),
    )
    result.problems.append(
        f"{row.path} was replaced by a new file; the new one is a new trajectory "
        f"({row.traj_id} and its atoms stay)"
    )


def _moves_and_gone(
    store: SkillStore,
    known: dict[str, FileRow],
    seen: set[str],
    kinds: set[str],
    candidates: list[_Candidate],
    result: ScanResult,
) -> None:
    """A file that vanished is gone, unless a new path is the same file (Codex archives by
    moving): same device and inode, and the same first bytes (an inode can be reused)."""
    missing = {
        (r.dev, r.ino): r
        for p, r in known.items()
        if p not in seen and r.kind in kinds and r.status == "active"
    }
    if not missing:
        return
    for c in candidates:
        old = missing.get((c.dev, c.ino)) if c.row is None else None
        if old is not None and _same_file(old, c.path):
            del missing[(c.dev, c.ino)]
            store.db.execute(
                "UPDATE files SET path = ?, status = 'active' WHERE path = ?", (c.path, old.path)
            )
            c.row = FileRow(**{**old.__dict__, "path": c.path, "status": "active"})
            result.moved += 1
    for row in missing.values():
        store.db.execute("UPDATE files SET status = 'gone' WHERE path = ?", (row.path,))
        result.gone += 1


@dataclass
class _Found:
    c: _Candidate
    end: int | None
    name: str | None = None  # a new file's trajectory id (made unique under the lock)
    head: str = ""


def _collect(
    store: SkillStore, candidates: list[_Candidate], inp: ScanInput, clock: Any, result: ScanResult
) -> None:
    # Appends to files already followed first (a person is waiting for those), then new files, newest first.
    candidates.sort(key=lambda c: (c.row is None, -c.mtime_ns if c.row is None else 0, c.path))
    home_id = store.home_id
    now = clock()
    found: list[_Found] = []
    for c in candidates:  # reading files happens outside the write lock
        if len(found) >= inp.limit:
            result.remaining += 1
            continue
        cursor = c.row.cursor if c.row is not None else 0
        try:
            end = delta_end(
                c.path,
                cursor,
                c.size,
                inp.max_delta_bytes,
                now - c.mtime_ns / 1e9 >= inp.settle_seconds,
            )
            item = _Found(c, end)
            if c.row is None:
                item.name, item.head = _name_new(c), head_of(c.path, c.size)
        except OSError as e:
            result.problems.append(f"{c.path}: cannot read ({e.strerror or e})")
            continue
        found.append(item)
    with store.transaction() as db:
        taken = set(
            store.traj_ids()
        )  # under the write lock: another scan may have named files meanwhile
        for item in found:
            c = item.c
            row = c.row or store.file(c.path)
            result.changed += 1
            if row is None:
                tid, n = item.name or "traj_unknown", 2
                while tid in taken or tid + "-side" in taken:
                    tid, n = f"{item.name}-{n}", n + 1
                taken.add(tid)
                db.execute(
                    "INSERT INTO files(path, kind, traj_id, subagent, size, mtime_ns, dev, ino, waiting, first_seen, head) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        c.path,
                        c.kind,
                        tid,
                        int(c.subagent),
                        c.size,
                        c.mtime_ns,
                        c.dev,
                        c.ino,
                        int(item.end is None),
                        now,
                        item.head,
                    ),
                )
                result.new_files += 1
                cursor = 0
            else:
                tid, cursor = row.traj_id, row.cursor
                db.execute(
                    "UPDATE files SET size = ?, mtime_ns = ?, waiting = ?, status = 'active' WHERE path = ?",
                    (c.size, c.mtime_ns, int(item.end is None), c.path),
                )
            if item.end is None or item.end <= cursor:
                result.waiting += 1
                continue
            result.deltas.append(
                DeltaRef(
                    path=c.path,
                    kind=c.kind,
                    traj_id=tid,
                    start=cursor,
                    end=item.end,
                    subagent=c.subagent,
                    home_id=home_id,
                )
            )


def _name_new(c: _Candidate) -> str:
    info = FileInfo(c.path, c.subagent)
    with open(c.path, "rb") as f:
        head = f.read(HEAD_BYTES)
    ident = adapter_for(c.kind).identity(head, info)
    return traj_id(KIND_TAG[c.kind], ident.model_or_project, ident.short_id)


def _clean_staging(home: Path, now: float) -> None:
    root = home / ".staging"
    for entry in _dirs(root):
        try:
            if now - entry.stat().st_mtime > STAGING_MAX_AGE:
                shutil.rmtree(entry.path, ignore_errors=True)
        except FileNotFoundError:
            pass


# -- render ----------------------------------------------------------------------------------


def lane_traj(traj: str, lane: str) -> str:
    return traj if lane == "main" else f"{traj}-side"


def render_delta(home: Path, delta: DeltaRef) -> RenderResult:
    """Parse and render a delta into staging; nothing the pipeline keeps is written here."""
    store = SkillStore(home)
    try:
        row = store.file(delta.path) or store.file_of(delta.traj_id)
        if row is None:
            raise LookupError(f"{delta.path} is not a followed transcript; run a scan first")
        result = RenderResult(key=delta.key)
        if row.cursor != delta.start:
            return result  # stale: the commit step will say so
        state = ParseState.model_validate_json(row.state)
        with open(row.path, "rb") as f:
            f.seek(delta.start)
            data = f.read(delta.end - delta.start)
        if len(data) != delta.end - delta.start:
            raise OSError(
                f"{row.path} has {delta.start + len(data)} bytes, fewer than the delta's end {delta.end}"
            )
        events = adapter_for(row.kind).parse(
            data, delta.start, state, FileInfo(row.path, bool(row.subagent))
        )
        lanes: list[dict[str, Any]] = []
        for lane in dict.fromkeys(e.lane for e in events):
            tid = lane_traj(row.traj_id, lane)
            trow = store.traj(tid)
            start = trow.md_chars if trow else 0
            project = os.path.basename(state.cwd) if state.cwd else None
            head = "" if trow else header(tid, row.kind, row.path, project, state.model)
            rendered = render([e for e in events if e.lane == lane], start + len(head))
            if not rendered.units:
                continue
            lanes.append(
                {
                    "lane": lane,
                    "traj_id": tid,
                    "md_start": start,
                    "md": head + rendered.text,
                    "units": [u.wire() for u in rendered.units],
                    "project": project,
                    "model": state.model,
                }
            )
            result.lanes.append(
                LaneSummary(
                    traj_id=tid,
                    md_start=start,
                    md_chars=len(head) + len(rendered.text),
                    units=len(rendered.units),
                    prompts=sum(1 for u in rendered.units if u.kind == "user"),
                )
            )
        result.opaque, result.unreadable = dict(state.opaque), state.unreadable
        stage = {
            "delta": delta.model_dump(),
            "state": state.model_dump_json(),
            "lanes": lanes,
            "path": row.path,
        }
        write_json(staging_dir(home, delta.key) / "render.json", stage)
        return result
    finally:
        store.close()


# -- commit ----------------------------------------------------------------------------------


def commit_delta(
    home: Path, delta: DeltaRef, waiting: Callable[[], None] | None = None
) -> CommitResult:
    """Views, indexes, atoms and the cursor for one delta, exactly once (see the module doc).

    A retried commit whose first attempt went through (the worker died before replying)
    gets the same answer, so the atoms it wrote are still routed on.
    """
    stage_dir = staging_dir(home, delta.key)
    store = SkillStore(home)
    try:
        with store.transaction(waiting) as db:
            row = store.file(delta.path) or store.file_of(delta.traj_id)
            if row is None:
                raise LookupError(f"{delta.path} is not a followed transcript")
            if row.cursor == delta.end and row.last_delta == delta.key:
                done = json.loads(row.last_atoms or "{}")
                return CommitResult(
                    committed=True,
                    atoms=done.get("atoms", []),
                    new=done.get("new", []),
                    cursor=delta.end,
                    reason="committed by an earlier attempt",
                )
            if row.cursor != delta.start:
                why = (
                    "already committed"
                    if row.cursor >= delta.end
                    else f"the cursor moved to {row.cursor}"
                )
                return CommitResult(
                    committed=False, reason=f"stale delta: {why}", cursor=row.cursor
                )
            render_stage = read_json(stage_dir / "render.json")
            atoms_stage = (
                read_json(stage_dir / "atoms.json")
                if (stage_dir / "atoms.json").exists()
                else {"lanes": []}
            )
            atoms_by_traj = {lane["traj_id"]: lane["atoms"] for lane in atoms_stage["lanes"]}
            written: list[str] = []
            new: list[str] = []
            for lane in render_stage["lanes"]:
                trow = store.traj(lane["traj_id"])
                before = trow.atoms if trow else 0
                ids = _commit_lane(
                    home,
                    store,
                    row,
                    lane,
                    [AtomTask.model_validate(a) for a in atoms_by_traj.get(lane["traj_id"], [])],
                    delta,
                )
                written += ids
                new += [a for a in ids if atom_number(a) > before]
            db.execute(
                "UPDATE files SET cursor = ?, state = ?, committed_at = ?, waiting = 0, last_delta = ?, last_atoms = ? "
                "WHERE path = ?",
                (
                    delta.end,
                    render_stage["state"],
                    time.time(),
                    delta.key,
                    json.dumps({"atoms": written, "new": new}),
                    row.path,
                ),
            )
        shutil.rmtree(stage_dir, ignore_errors=True)
        return CommitResult(committed=True, atoms=written, new=new, cursor=delta.end)
    finally:
        store.close()


def _commit_lane(
    home: Path,
    store: SkillStore,
    row: FileRow,
    lane: dict[str, Any],
    atoms: list[AtomTask],
    delta: DeltaRef,
) -> list[str]:
    tid = lane["traj_id"]
    trow = store.traj(tid)
    md_bytes = trow.md_bytes if trow else 0
    index_bytes = trow.index_bytes if trow else 0
    count = trow.atoms if trow else 0
    text: str = lane["md"]
    data = text.encode("utf-8")
    append_at(md_path(home, tid), md_bytes, data)
    index_lines = [
        json.dumps(
            {
                "delta": f"bytes {delta.start}-{delta.end}",
                "path": row.path,
                "render": RENDER_VERSION,
            }
        )
    ]
    index_lines += [
        json.dumps(
            {k: u[k] for k in ("s", "e", "kind", "offset", "end", "uuid", "call_id") if k in u}
        )
        for u in lane["units"]
    ]
    index_data = ("\n".join(index_lines) + "\n").encode("utf-8")
    append_at(index_path(home, tid), index_bytes, index_data)
    folder = tasks_dir(home, tid)
    folder.mkdir(parents=True, exist_ok=True)
    for stray in folder.glob("atom_*.json"):  # numbered past the count: left by a crashed attempt
        try:
            if atom_number(stray.stem) > count:
                stray.unlink()
        except ValueError:
            continue
    for atom in atoms:
        write_json(atom_path(home, tid, atom.atom_id), atom.model_dump(mode="json"), sync=True)
    _fsync_dir(folder)
    new_count = max([count, *(atom_number(a.atom_id) for a in atoms)])
    last = atom_id(tid, new_count) if new_count else None
    store.db.execute(
        "INSERT INTO trajs(traj_id, kind, path, lane, project, model, md_chars, md_bytes, index_bytes, atoms, last_atom, updated) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(traj_id) DO UPDATE SET path = excluded.path, "
        "model = COALESCE(excluded.model, trajs.model), md_chars = excluded.md_chars, md_bytes = excluded.md_bytes, "
        "index_bytes = excluded.index_bytes, atoms = excluded.atoms, last_atom = excluded.last_atom, updated = excluded.updated",
        (
            tid,
            row.kind,
            row.path,
            lane["lane"],
            lane.get("project"),
            lane.get("model"),
            (trow.md_chars if trow else 0) + len(text),
            md_bytes + len(data),
            index_bytes + len(index_data),
            new_count,
            last,
            time.time(),
        ),
    )
    return [a.atom_id for a in atoms]


# -- files -----------------------------------------------------------------------------------


def append_at(path: Path, at: int, data: bytes) -> None:
    """Cut ``path`` to ``at`` bytes (what a crashed attempt appended goes) and append ``data``, durably."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, at)
        os.lseek(fd, at, os.SEEK_SET)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text(path: Path, text: str, sync: bool = False) -> None:
    """Atomic (temp file + rename); with ``sync``, durable before the rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, value: Any, sync: bool = False) -> None:
    write_text(path, json.dumps(value, ensure_ascii=False, indent=1), sync)


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_atoms(home: Path, tid: str) -> list[AtomTask]:
    folder = tasks_dir(home, tid)
    return sorted(
        (AtomTask.model_validate(read_json(p)) for p in folder.glob("atom_*.json")),
        key=lambda a: a.offset_start,
    )


def md_tail(home: Path, tid: str, md_bytes: int, chars: int = 2000) -> str:
    """The last characters of a trajectory's committed view (for an atom's context_prefix)."""
    path = md_path(home, tid)
    if md_bytes <= 0 or not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(max(0, md_bytes - chars * 4))
        return f.read(min(md_bytes, chars * 4)).decode("utf-8", errors="ignore")[-chars:]
