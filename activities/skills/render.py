"""The render step: a delta's bytes → the view text and units it will append, in staging.

:func:`render_delta` parses a delta with its source's adapter, continuing from the parse
state saved at the cursor, redacts, and stages the view text of each lane (the main
conversation, or a side lane) with its units. Nothing the pipeline keeps is written here:
the commit step (:func:`activities.skills.scan.commit_delta`) appends what is staged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from activities.fsio import write_json
from activities.skills.scan import one_huge_line
from activities.skills.store import SkillStore
from xsky.skills.layout import staging_dir
from xsky.skills.runs import DeltaRef, LaneSummary, RenderResult
from xsky.skills.sessions import session_of
from xsky.skills.trajectory import header, render
from xsky.skills.transcripts import FileInfo, ParseState, adapter_for


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
        info = FileInfo(
            row.path, bool(row.subagent), owner=lambda key: store.owner(key, row.traj_id)
        )
        before = (dict(state.interpreted), dict(state.opaque), state.unreadable)
        with open(row.path, "rb") as f:
            huge = one_huge_line(f, delta.start, delta.end)
            f.seek(delta.start)
            data = b"" if huge else f.read(delta.end - delta.start)
        if huge:  # one record of more than HUGE_LINE bytes: passed over, unread
            state.unreadable += 1
            events = []
        elif len(data) != delta.end - delta.start:
            raise OSError(
                f"{row.path} has {delta.start + len(data)} bytes, fewer than the delta's end {delta.end}"
            )
        else:
            events = adapter_for(row.kind).parse(data, delta.start, state, info)
        lanes: list[dict[str, Any]] = []
        for lane in dict.fromkeys(e.lane for e in events):
            tid = lane_traj(row.traj_id, lane)
            trow = store.traj(tid)
            start = trow.md_chars if trow else 0
            project = os.path.basename(state.cwd) if state.cwd else None
            # No model in the header: the first delta may end before the first answer names it,
            # and the view (its offsets) must not depend on where deltas are cut.
            head = "" if trow else header(tid, row.kind, row.path, project, None)
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
                    # the person's session, when the file says it is another's sub-agent
                    "session": state.parent_session,
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
        result.interpreted = _added(before[0], state.interpreted)
        result.opaque = _added(before[1], state.opaque)
        result.unreadable = state.unreadable - before[2]
        stage = {
            "delta": delta.model_dump(),
            "state": state.model_dump_json(),
            "lanes": lanes,
            "path": row.path,
            # the records read here, claimed at the commit for the session this file is of
            "claims": info.claims,
            # (only a file that looked for copies can have read one another commits meanwhile)
            "looked": state.looked,
            "session": state.parent_session or session_of(row.kind, row.path) or row.traj_id,
        }
        write_json(staging_dir(home, delta.key) / "render.json", stage, sync=False)
        return result
    finally:
        store.close()


def _added(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """This delta's counts: the parse state's running totals minus those at the cursor."""
    return {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0) > 0}
