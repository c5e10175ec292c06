"""Finished agent conversations as JSONL transcripts, so our own agents feed the skill pipeline.

``$XSKY_HOME/transcripts/<run>/<agent>-d<dispatch>-<key>.jsonl``: a ``session`` line, a
``message`` line per chat message (OpenAI shape), an ``outcome`` line. Written once per
finished attempt, atomically (a temporary name the watcher ignores, then a rename), so
the watcher never sees half a conversation. The format is read back by
``xsky/transcripts/xsky_agent.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xsky.artifacts import safe_component
from xsky.models import RoleCapabilityModel
from xsky.runs import AgentInput


def transcript_path(root: Path, inp: AgentInput, key: str) -> Path:
    name = f"{safe_component(inp.agent.id, 60)}-d{inp.dispatch}-{safe_component(key, 40)}.jsonl"
    return root / safe_component(inp.run_id) / name


def write_transcript(root: Path, inp: AgentInput, role: RoleCapabilityModel, model: str, key: str,
                     messages: list[dict[str, Any]], status: str, error: str | None = None,
                     extra: dict[str, Any] | None = None) -> Path:
    now = datetime.now(timezone.utc).isoformat()
    lines: list[dict[str, Any]] = [{
        "type": "session", "runId": inp.run_id, "agentId": inp.agent.id, "taskId": inp.task_id, "dispatch": inp.dispatch,
        "role": role.name, "model": model, "timestamp": now, **(extra or {}),
    }]
    lines += [{"type": "message", "message": m} for m in messages]
    lines.append({"type": "outcome", "status": status, "error": error, "timestamp": now})
    path = transcript_path(root, inp, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".writing-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
