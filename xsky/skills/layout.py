"""Where the skill pipeline keeps things under the skills home (``XSKY_SKILLS_HOME``).

<home>/state.db                                cursors, trajectories, scan history (SQLite)
<home>/<tag>_sessions/traj_<…>.md              the trajectory view (tag: cc, codex, xsky)
<home>/<tag>_sessions/traj_<…>/index.jsonl     view ranges → raw file bytes / uuid / call_id
<home>/<tag>_sessions/traj_<…>/tasks/atom_traj_<…>_NNNN.json
<home>/.staging/<delta key>/                   a delta's work between activities
<home>/skills/<slug>/                          the skill library (its own git repository each)
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from xsky.skills.transcripts import KIND_TAG


def sessions_dir(home: Path, kind: str) -> Path:
    return home / f"{KIND_TAG[kind]}_sessions"


def kind_of(traj_id: str) -> str:
    tag = traj_id.split("_")[1]
    for kind, t in KIND_TAG.items():
        if t == tag:
            return kind
    raise ValueError(f"{traj_id!r} is not a trajectory id (traj_<cc|codex|xsky>_<project>_<id>)")


def md_path(home: Path, traj_id: str) -> Path:
    return sessions_dir(home, kind_of(traj_id)) / f"{traj_id}.md"


def traj_dir(home: Path, traj_id: str) -> Path:
    return sessions_dir(home, kind_of(traj_id)) / traj_id


def index_path(home: Path, traj_id: str) -> Path:
    return traj_dir(home, traj_id) / "index.jsonl"


def tasks_dir(home: Path, traj_id: str) -> Path:
    return traj_dir(home, traj_id) / "tasks"


def atom_path(home: Path, traj_id: str, aid: str) -> Path:
    return tasks_dir(home, traj_id) / f"{aid}.json"


def staging_dir(home: Path, key: str) -> Path:
    safe = key if len(key) <= 150 else key[:120] + hashlib.sha256(key.encode()).hexdigest()[:16]
    return home / ".staging" / safe


def state_db(home: Path) -> Path:
    return home / "state.db"
