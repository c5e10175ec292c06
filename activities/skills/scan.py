"""Transcripts → trajectory views → atoms on disk: the scan and commit steps.

- :func:`scan` is a tick's only work when nothing changed: one ``stat`` per transcript
  (:mod:`.discover` finds them), compared with the cursors in the store; only files that
  grew are opened, and only their appended bytes are read (to end the delta on a complete
  line).
- Between the two, :func:`activities.skills.render.render_delta` parses a delta and stages
  the view text it will append, and the TaskAgent stages its atoms.
- :func:`commit_delta` is the only writer of views, indexes, atoms and cursors: in one
  SQLite transaction it checks the cursor is still at the delta's start (compare and
  swap), truncates what a crashed attempt may have half-appended, writes and fsyncs the
  files, and only then advances the cursor. A delta is thereby committed exactly once.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from activities.fsio import append_at, fsync_dir, read_json, write_json
from activities.skills.discover import discover, head_of, same_file, subdirs
from activities.skills.store import FileRow, SkillStore, TrajRow
from activities.skills.unpacked import Copy, sweep, unpack
from xsky.skills.atoms import AtomTask, atom_id, atom_number
from xsky.skills.layout import atom_path, index_path, md_path, staging_dir, tasks_dir
from xsky.skills.runs import CommitResult, DeltaRef, ScanInput, ScanResult
from xsky.skills.sessions import session_of
from xsky.skills.sources import Source
from xsky.skills.trajectory import RENDER_VERSION, traj_id
from xsky.skills.transcripts import KIND_TAG, FileInfo, adapter_for

HEAD_BYTES = 64 * 1024  # read from a new file to name it (cwd, session id, model)
STAGING_MAX_AGE = 24 * 3600.0


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


# One record longer than this is passed over unread, counted unreadable (render.py): a
# transcript line of gigabytes must not be read into a worker's memory to be parsed.
HUGE_LINE = 64 << 20


def one_huge_line(f: BinaryIO, start: int, end: int) -> bool:
    """Whether the bytes [start, end) of ``f`` are a single line over HUGE_LINE (found by
    reading in pieces: nothing of it is held)."""
    if end - start <= HUGE_LINE:
        return False
    f.seek(start)
    at = start
    while at < end - 1:
        chunk = f.read(min(1 << 20, end - 1 - at))
        if not chunk:
            break
        if b"\n" in chunk:
            return False
        at += len(chunk)
    return True


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
            if size - start > HUGE_LINE:  # not read into memory: render passes over it
                return size
            f.seek(start)
            tail = f.read(size - start)
            try:
                if isinstance(json.loads(tail), dict):
                    return size
            except ValueError:
                pass
    return None


def scan(
    home: Path, sources: list[Source], inp: ScanInput, clock: Callable[[], float] = time.time
) -> ScanResult:
    """Deltas to process, oldest-known files first; cheap when nothing changed."""
    started = time.perf_counter()
    result = ScanResult()
    store = SkillStore(home)
    try:
        known = store.files()
        seen: set[str] = set()
        candidates: list[_Candidate] = []
        scanned_kinds: set[str] = set()
        all_packed: list[str] = []  # every compressed Codex rollout found (skills/unpacked.py)
        for source in sources:
            if not source.root.is_dir():
                # A kind's usual place may never exist (no Codex here): only a folder a
                # person named is worth a warning on every scan.
                if not source.usual:
                    result.problems.append(
                        f"{source.label()}: no such folder (registered in {source.origin}); "
                        f"fix the path or `starter.py skills remove-source {source.kind} {source.root}`"
                    )
                continue
            scanned_kinds.add(source.kind)
            packed: list[str] = []
            found: list[tuple[os.DirEntry[str] | Copy, bool]] = list(discover(source, packed))
            all_packed += packed
            # (one read before Codex compressed it was read whole: it had been cold a week)
            packed = [p for p in packed if p.removesuffix(".zst") not in known]
            if packed:  # Codex's compressed rollouts, read through a decompressed copy each
                copies, problems = unpack(home, packed)
                found += [(copy, False) for copy in copies]
                result.problems += problems
            for entry, subagent in found:
                path = entry.path
                if path in seen:
                    continue
                seen.add(path)
                st = entry.stat(follow_symlinks=False)
                result.files += 1
                row = known.get(path)
                seen_as = _observe(row, st, path, clock, inp.settle_seconds)
                if seen_as in ("unfollowed", "unchanged"):
                    continue
                if seen_as == "settling":
                    result.waiting += 1
                    continue
                if row is not None and seen_as == "truncated":
                    store.mark_truncated(path, st.st_size)
                    result.problems.append(
                        f"{path} shrank below what was already read ({row.cursor} bytes); "
                        "it is no longer followed (its trajectory and atoms stay)"
                    )
                    continue
                if row is not None and seen_as == "replaced":
                    _retire_replaced(store, row, result)  # a new file at an old path
                    row = None
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
        if "codex" in scanned_kinds:  # (a rollout no longer found: its copy goes)
            sweep(home, all_packed)
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


Seen = Literal["new", "grew", "unchanged", "unfollowed", "replaced", "truncated", "settling"]


def _observe(
    row: FileRow | None, st: os.stat_result, path: str, clock: Callable[[], float], settle: float
) -> Seen:
    """What a scan makes of a transcript it found, given what the store knows of its path."""
    if row is None:
        return "new"
    if row.status in ("truncated", "replaced"):
        return "unfollowed"  # said so when it happened
    if st.st_size == row.cursor and row.status == "active" and row.ino == st.st_ino:
        return "unchanged"
    if row.ino != st.st_ino or row.dev != st.st_dev or not same_file(row.head, path):
        return "replaced"  # a new trajectory
    if st.st_size < row.cursor:
        return "truncated"
    if (
        row.waiting
        and st.st_size == row.size
        and st.st_mtime_ns == row.mtime_ns
        and clock() - st.st_mtime_ns / 1e9 < settle
    ):
        return "settling"  # only a partial last line, still being written
    return "grew"


def _retire_replaced(store: SkillStore, row: FileRow, result: ScanResult) -> None:
    store.retire(row)
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
        if old is not None and same_file(old.head, c.path):
            del missing[(c.dev, c.ino)]
            store.move(old.path, c.path)
            c.row = FileRow(**{**old.__dict__, "path": c.path, "status": "active"})
            result.moved += 1
    for row in missing.values():
        store.mark_gone(row.path)
        result.gone += 1


@dataclass
class _Found:
    c: _Candidate
    end: int | None
    name: str | None = None  # a new file's trajectory id (made unique under the lock)
    head: str = ""


def _collect(
    store: SkillStore,
    candidates: list[_Candidate],
    inp: ScanInput,
    clock: Callable[[], float],
    result: ScanResult,
) -> None:
    # Appends to files already followed first (a person is waiting for those), then new files, newest first.
    candidates.sort(key=lambda c: (c.row is None, -c.mtime_ns if c.row is None else 0, c.path))
    home_id = store.home_id
    now = clock()
    found: list[_Found] = []
    sessions: dict[tuple[str, str], tuple[str, int]] | None = None  # made when a copy asks
    for c in candidates:  # reading files happens outside the write lock
        if len(found) >= inp.limit:
            result.remaining += 1
            continue
        cursor = c.row.cursor if c.row is not None else 0
        try:
            name, copies = _name_new(c) if c.row is None else ("", None)
            if copies is not None:
                if sessions is None:
                    sessions = _files_by_session(store, candidates)
                if _parent_unread(store, c, sessions.get((c.kind, copies))):
                    result.waiting += 1  # its parent's file first: what this one copies is its
                    continue
            end = delta_end(
                c.path,
                cursor,
                c.size,
                inp.max_delta_bytes,
                now - c.mtime_ns / 1e9 >= inp.settle_seconds,
            )
            item = _Found(c, end)
            if c.row is None:
                item.name, item.head = name, head_of(c.path, c.size)
        except OSError as e:
            result.problems.append(f"{c.path}: cannot read ({e.strerror or e})")
            continue
        found.append(item)
    with store.transaction():
        # under the write lock: another scan may have named files meanwhile
        taken = set(store.traj_ids())
        for item in found:
            c = item.c
            row = c.row or store.file(c.path)
            result.changed += 1
            if row is None:
                tid, n = item.name or "traj_unknown", 2
                while tid in taken or tid + "-side" in taken:
                    tid, n = f"{item.name}-{n}", n + 1
                taken.add(tid)
                store.add_file(
                    c.path,
                    c.kind,
                    tid,
                    c.subagent,
                    c.size,
                    c.mtime_ns,
                    c.dev,
                    c.ino,
                    waiting=item.end is None,
                    first_seen=now,
                    head=item.head,
                )
                result.new_files += 1
                cursor = 0
            else:
                tid, cursor = row.traj_id, row.cursor
                store.saw(c.path, c.size, c.mtime_ns, waiting=item.end is None)
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


def _name_new(c: _Candidate) -> tuple[str, str | None]:
    """A new file's trajectory name, and the session whose records it begins by copying."""
    info = FileInfo(c.path, c.subagent)
    with open(c.path, "rb") as f:
        head = f.read(HEAD_BYTES)
    ident = adapter_for(c.kind).identity(head, info)
    return traj_id(KIND_TAG[c.kind], ident.model_or_project, ident.short_id), ident.copies


def _files_by_session(
    store: SkillStore, candidates: list[_Candidate]
) -> dict[tuple[str, str], tuple[str, int]]:
    """(kind, session) → (path, size) of every file followed or found, by the session its
    path names."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for row in store.files().values():
        if row.status == "active" and (session := session_of(row.kind, row.path)):
            out[(row.kind, session)] = (row.path, row.size)
    for c in candidates:
        if session := session_of(c.kind, c.path):
            out[(c.kind, session)] = (c.path, c.size)
    return out


def _parent_unread(store: SkillStore, c: _Candidate, parent: tuple[str, int] | None) -> bool:
    """Whether the file of the session ``c`` copies (a Codex fork's parent, a sub-agent's) has
    not been read as far as it was long when ``c`` was first found: read first, the records
    ``c`` copies are its, and ``c``'s copy of them is passed over. (Read ``c`` first, and a
    sub-agent would hold its parent's tasks as the model's.)"""
    if parent is None:  # not here (removed, in a folder not followed): nothing to wait for
        return False
    path, size = parent
    key = f"copies-of:{c.path}"
    upto = store.get_meta(key)
    if upto is None:
        upto = size
        store.set_meta(key, upto)
    row = store.file(path)
    if row is not None and (row.cursor >= upto or row.status != "active"):
        store.db.execute("DELETE FROM meta WHERE key = ?", (key,))
        return False
    return True


def _clean_staging(home: Path, now: float) -> None:
    root = home / ".staging"
    for entry in subdirs(root):
        try:
            if now - entry.stat().st_mtime > STAGING_MAX_AGE:
                shutil.rmtree(entry.path, ignore_errors=True)
        except FileNotFoundError:
            pass


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
        with store.transaction(waiting):
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
            claims: list[str] = render_stage.get("claims", [])
            if render_stage.get("looked") and store.held_elsewhere(claims, row.traj_id):
                # Another transcript holding the same records (a session resumed into a new
                # file, a fork) committed them since this delta was read: read it again, and
                # its copy of them is passed over.
                return CommitResult(
                    committed=False,
                    reason="stale delta: another transcript committed records it copies; read again",
                    cursor=row.cursor,
                )
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
            store.claim(claims, row.traj_id, str(render_stage.get("session") or row.traj_id))
            store.advance_cursor(
                row.path,
                delta.end,
                render_stage["state"],
                delta.key,
                {"atoms": written, "new": new},
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
    index_lines += [json.dumps(_index_row(u)) for u in lane["units"]]
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
    fsync_dir(folder)
    new_count = max([count, *(atom_number(a.atom_id) for a in atoms)])
    last = atom_id(tid, new_count) if new_count else None
    store.put_traj(
        TrajRow(
            traj_id=tid,
            kind=row.kind,
            path=row.path,
            lane=lane["lane"],
            project=lane.get("project"),
            model=lane.get("model"),
            md_chars=(trow.md_chars if trow else 0) + len(text),
            md_bytes=md_bytes + len(data),
            index_bytes=index_bytes + len(index_data),
            atoms=new_count,
            last_atom=last,
            updated=time.time(),
        )
    )
    return [a.atom_id for a in atoms]


def _index_row(u: dict[str, Any]) -> dict[str, Any]:
    """A unit's index line; a user turn or a compaction keeps its first characters and who
    wrote it, so the TaskAgent's map of turns and a later delta's splitter can read them."""
    row: dict[str, Any] = {
        k: u[k] for k in ("s", "e", "kind", "offset", "end", "uuid", "call_id") if k in u
    }
    if u.get("kind") in ("user", "compaction"):
        row.update({k: u[k] for k in ("head", "origin", "marker") if k in u})
    elif "marker" in u:
        row["marker"] = u["marker"]
    return row


# -- reading back ----------------------------------------------------------------------------


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
