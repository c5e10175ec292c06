"""The skill pipeline's bookkeeping: byte cursors, trajectories and scans, in one SQLite file.

SQLite (WAL, a busy timeout) because several activities on several worker processes
touch it at once: the scan records what it saw, and each delta's commit advances a cursor
with a compare-and-swap inside one ``BEGIN IMMEDIATE`` transaction — so a delta is
committed only if the cursor is still where the delta starts, and exactly once.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xsky.skills.layout import state_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    traj_id TEXT NOT NULL,
    subagent INTEGER NOT NULL DEFAULT 0,
    cursor INTEGER NOT NULL DEFAULT 0,      -- bytes committed (atoms durably written)
    size INTEGER NOT NULL DEFAULT 0,        -- size when last seen by a scan
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    dev INTEGER NOT NULL DEFAULT 0,
    ino INTEGER NOT NULL DEFAULT 0,
    waiting INTEGER NOT NULL DEFAULT 0,     -- 1: only a partial last line is left
    status TEXT NOT NULL DEFAULT 'active',  -- active | gone | truncated | replaced
    state TEXT NOT NULL DEFAULT '{}',       -- the adapter's ParseState at the cursor
    first_seen REAL NOT NULL,
    committed_at REAL,
    head TEXT NOT NULL DEFAULT '',          -- "<n>:<sha256 of the first n bytes>": the file's identity
    last_delta TEXT NOT NULL DEFAULT '',    -- the last committed delta's key …
    last_atoms TEXT NOT NULL DEFAULT '{}'   -- … and what it wrote, so a retried commit answers the same
);
CREATE UNIQUE INDEX IF NOT EXISTS files_traj ON files(traj_id);
CREATE TABLE IF NOT EXISTS trajs (
    traj_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    lane TEXT NOT NULL DEFAULT 'main',
    project TEXT,
    model TEXT,
    md_chars INTEGER NOT NULL DEFAULT 0,
    md_bytes INTEGER NOT NULL DEFAULT 0,
    index_bytes INTEGER NOT NULL DEFAULT 0,
    atoms INTEGER NOT NULL DEFAULT 0,
    last_atom TEXT,
    updated REAL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- Each record read into a trajectory, by its key (a Claude Code uuid, a Codex thread hash):
-- a resumed or forked session's copy of it is passed over, and counts as that session.
CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY,
    traj_id TEXT NOT NULL,
    session TEXT NOT NULL DEFAULT ''
);
"""


@dataclass
class FileRow:
    path: str
    kind: str
    traj_id: str
    subagent: bool
    cursor: int
    size: int
    mtime_ns: int
    dev: int
    ino: int
    waiting: bool
    status: str
    state: str
    first_seen: float
    committed_at: float | None
    head: str
    last_delta: str
    last_atoms: str


@dataclass
class TrajRow:
    traj_id: str
    kind: str
    path: str
    lane: str
    project: str | None
    model: str | None
    md_chars: int
    md_bytes: int
    index_bytes: int
    atoms: int
    last_atom: str | None
    updated: float | None


UNREADABLE = "(no JSON object)"  # the record type ``skills status`` gives unreadable lines


@dataclass
class RecordCount:
    """One record type of one source kind: how often it was seen, and how it was taken."""

    kind: str  # the source kind (claude-code, codex, xsky)
    record: str  # ``type`` or ``type/subtype``
    # "interpreted": a rule read it; "opaque": kept in the raw file, not read; "unreadable":
    # lines that are no JSON object (a damaged or foreign file), passed over
    how: str
    count: int = 0
    trajs: set[str] = field(default_factory=set)  # the trajectories it was seen in

    def wire(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "record": self.record,
            "how": self.how,
            "count": self.count,
            "trajectories": len(self.trajs),
        }


class SkillStore:
    def __init__(self, home: Path):
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(
            state_db(home), timeout=60, isolation_level=None, check_same_thread=False
        )
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        have = {row[1] for row in self.db.execute("PRAGMA table_info(files)")}
        for column, decl in (
            ("head", "TEXT NOT NULL DEFAULT ''"),
            ("last_delta", "TEXT NOT NULL DEFAULT ''"),
            ("last_atoms", "TEXT NOT NULL DEFAULT '{}'"),
        ):
            if column not in have:  # a home made by an earlier version
                self.db.execute(f"ALTER TABLE files ADD COLUMN {column} {decl}")
        self.db.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES('home_id', ?)",
            (json.dumps(uuid.uuid4().hex[:8]),),
        )

    @property
    def home_id(self) -> str:
        """Made once with the database: a rebuilt home (or another person's) gets new delta ids."""
        return str(self.get_meta("home_id"))

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(
        self, waiting: Callable[[], None] | None = None
    ) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken before reading (no lost updates between processes).

        While another process holds the lock, ``waiting`` is called every couple of seconds
        (an activity heartbeats: it is alive, only queued), for up to ten minutes.
        """
        deadline = time.monotonic() + 600
        self.db.execute("PRAGMA busy_timeout = 2000")
        while True:
            try:
                self.db.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                if waiting is not None:
                    waiting()
        self.db.execute("PRAGMA busy_timeout = 60000")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- files -----------------------------------------------------------------------------

    def files(self) -> dict[str, FileRow]:
        rows = self.db.execute(f"SELECT {', '.join(FileRow.__annotations__)} FROM files").fetchall()
        return {r[0]: FileRow(*r) for r in rows}

    def file(self, path: str) -> FileRow | None:
        r = self.db.execute(
            f"SELECT {', '.join(FileRow.__annotations__)} FROM files WHERE path = ?", (path,)
        ).fetchone()
        return FileRow(*r) if r else None

    def file_of(self, traj_id: str) -> FileRow | None:
        r = self.db.execute(
            f"SELECT {', '.join(FileRow.__annotations__)} FROM files WHERE traj_id = ?", (traj_id,)
        ).fetchone()
        return FileRow(*r) if r else None

    def traj_ids(self) -> set[str]:
        return {
            r[0]
            for r in self.db.execute("SELECT traj_id FROM trajs UNION SELECT traj_id FROM files")
        }

    def add_file(
        self,
        path: str,
        kind: str,
        traj_id: str,
        subagent: bool,
        size: int,
        mtime_ns: int,
        dev: int,
        ino: int,
        waiting: bool,
        first_seen: float,
        head: str,
    ) -> None:
        """Follow a new transcript from byte 0."""
        self.db.execute(
            "INSERT INTO files(path, kind, traj_id, subagent, size, mtime_ns, dev, ino, waiting, first_seen, head) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                path,
                kind,
                traj_id,
                int(subagent),
                size,
                mtime_ns,
                dev,
                ino,
                int(waiting),
                first_seen,
                head,
            ),
        )

    def saw(self, path: str, size: int, mtime_ns: int, waiting: bool) -> None:
        """What a scan saw of a followed file (it is active again if it was gone)."""
        self.db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, waiting = ?, status = 'active' WHERE path = ?",
            (size, mtime_ns, int(waiting), path),
        )

    def mark_truncated(self, path: str, size: int) -> None:
        """The file shrank below its cursor: no longer followed (its trajectory stays)."""
        self.db.execute(
            "UPDATE files SET status = 'truncated', size = ? WHERE path = ?", (size, path)
        )

    def mark_gone(self, path: str) -> None:
        self.db.execute("UPDATE files SET status = 'gone' WHERE path = ?", (path,))

    def retire(self, row: FileRow) -> None:
        """A new file took this one's path: the old row steps aside under another name (no
        longer followed), so the path can start a new trajectory."""
        self.db.execute(
            "UPDATE files SET path = ?, status = 'replaced' WHERE path = ?",
            (f"{row.path}#replaced-{row.ino}", row.path),
        )

    def move(self, old_path: str, new_path: str) -> None:
        """The file was moved (renamed, archived): follow it at its new path."""
        self.db.execute(
            "UPDATE files SET path = ?, status = 'active' WHERE path = ?", (new_path, old_path)
        )

    # -- records ----------------------------------------------------------------------------

    def owner(self, key: str, traj_id: str) -> str | None:
        """The session of the other trajectory that holds record ``key``, else None."""
        r = self.db.execute(
            "SELECT session FROM records WHERE key = ? AND traj_id != ?", (key, traj_id)
        ).fetchone()
        return str(r[0]) if r else None

    def held_elsewhere(self, keys: list[str], traj_id: str) -> int:
        """How many of ``keys`` another trajectory committed (meanwhile, in a parallel delta)."""
        held = 0
        for at in range(0, len(keys), 500):
            part = keys[at : at + 500]
            held += self.db.execute(
                f"SELECT COUNT(*) FROM records WHERE traj_id != ? AND key IN ({','.join('?' * len(part))})",
                (traj_id, *part),
            ).fetchone()[0]
        return held

    def claim(self, keys: list[str], traj_id: str, session: str) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO records(key, traj_id, session) VALUES(?, ?, ?)",
            [(k, traj_id, session) for k in keys],
        )

    def advance_cursor(
        self, path: str, cursor: int, state: str, delta_key: str, written: dict[str, Any]
    ) -> None:
        """A delta committed: the cursor at its end, the parse state there, and what it wrote
        (so a retried commit answers the same)."""
        self.db.execute(
            "UPDATE files SET cursor = ?, state = ?, committed_at = ?, waiting = 0, last_delta = ?, last_atoms = ? "
            "WHERE path = ?",
            (cursor, state, time.time(), delta_key, json.dumps(written), path),
        )

    def record_counts(self) -> list[RecordCount]:
        """Every record type seen, per source kind: how many, and whether a rule read it.

        Summed over the followed files' parse states at their cursors, so each record counts
        once however often a delta was retried (a state is saved only with its commit).
        """
        totals: dict[tuple[str, str, str], RecordCount] = {}
        for kind, traj_id, state in self.db.execute("SELECT kind, traj_id, state FROM files"):
            try:
                parsed = json.loads(state)
            except ValueError:
                continue
            if not isinstance(parsed, dict):
                continue
            for how in ("interpreted", "opaque"):
                counts = parsed.get(how)
                for record, n in (counts if isinstance(counts, dict) else {}).items():
                    if not isinstance(n, int) or n <= 0:
                        continue
                    row = totals.setdefault(
                        (kind, str(record), how), RecordCount(kind, str(record), how)
                    )
                    row.count += n
                    row.trajs.add(traj_id)
            bad = parsed.get("unreadable")
            if isinstance(bad, int) and bad > 0:
                row = totals.setdefault(
                    (kind, UNREADABLE, "unreadable"), RecordCount(kind, UNREADABLE, "unreadable")
                )
                row.count += bad
                row.trajs.add(traj_id)
        return sorted(
            totals.values(), key=lambda r: (r.kind, r.how != "opaque", -r.count, r.record)
        )

    # -- trajectories ------------------------------------------------------------------------

    def traj(self, traj_id: str) -> TrajRow | None:
        r = self.db.execute(
            f"SELECT {', '.join(TrajRow.__annotations__)} FROM trajs WHERE traj_id = ?", (traj_id,)
        ).fetchone()
        return TrajRow(*r) if r else None

    def trajs(self) -> list[TrajRow]:
        rows = self.db.execute(
            f"SELECT {', '.join(TrajRow.__annotations__)} FROM trajs ORDER BY traj_id"
        ).fetchall()
        return [TrajRow(*r) for r in rows]

    def put_traj(self, t: TrajRow) -> None:
        """Record a trajectory's view, index and atoms; an existing row keeps its kind, lane
        and project, and its model when ``t`` has none."""
        self.db.execute(
            "INSERT INTO trajs(traj_id, kind, path, lane, project, model, md_chars, md_bytes, index_bytes, atoms, last_atom, updated) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(traj_id) DO UPDATE SET path = excluded.path, "
            "model = COALESCE(excluded.model, trajs.model), md_chars = excluded.md_chars, md_bytes = excluded.md_bytes, "
            "index_bytes = excluded.index_bytes, atoms = excluded.atoms, last_atom = excluded.last_atom, updated = excluded.updated",
            (
                t.traj_id,
                t.kind,
                t.path,
                t.lane,
                t.project,
                t.model,
                t.md_chars,
                t.md_bytes,
                t.index_bytes,
                t.atoms,
                t.last_atom,
                t.updated,
            ),
        )

    # -- meta --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> Any:
        r = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(r[0]) if r else None

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )
