"""Scores of a library skill's uses, each bound to the side and commit that was used.

:func:`scores_of` turns the atoms of a delta that used skills into UX scores bound to (skill,
side, commit). An xsky agent's transcript names the side and commit it read; for a Claude Code
or Codex session, the moment it used the skill is read back from its transcript, and with it
the side installed then.

An atom says *that* its session used a skill (``used_skills``, measured by the adapter); its
raw anchors (``provenance.raw``: file and byte range) say where in the transcript. The time
is the ``timestamp`` of the record that used it, read back from those bytes:

- Claude Code: an assistant ``tool_use`` of ``Skill`` naming the skill (``input.skill``,
  without a plugin namespace: ``ns:name`` is a plugin's skill, not the library's), or a
  ``Read``/``View`` of ``…/skills/<name>/SKILL.md``, or a ``Bash`` command that reads it,
  or the skill loaded by a slash command (``isMeta`` "Base directory for this skill: …");
  a call whose ``tool_result`` says ``is_error`` is not use (the next one is);
- Codex: a ``function_call``/``custom_tool_call``/``local_shell_call`` whose arguments
  name ``…/skills/<name>/SKILL.md`` (Codex opens the file itself).

When no such record is in the anchors (a shape this reader does not know), the first
timestamp of the anchors stands in, the start of the atom's task. The switch log
(:mod:`activities.skills.canary_export`) then gives the side and commit in force at that
moment (:func:`xsky.skills.canary_window.installed_at`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from activities.skills import git as skill_git
from activities.skills.canary_export import read_switches
from activities.skills.files import now_iso, read_atom, skill_dir
from xsky.skills import canary_window as cw
from xsky.skills.atoms import AtomTask
from xsky.skills.models import RouteInput, Score
from xsky.skills.spec import NAME_RE
from xsky.skills.transcripts import text_of
from xsky.skills.transcripts.claude_code import SKILL_LOADED

READ_CAP = 16 * 1024 * 1024  # bytes of one anchor read back (an atom's span; more is cut)
_CODEX_CALLS = ("function_call", "custom_tool_call", "local_shell_call")


def skill_file(name: str) -> re.Pattern[str]:
    return re.compile(rf"skills/{re.escape(name)}/SKILL\.md")


def use_time(atom: AtomTask, name: str) -> datetime | None:
    """The moment the atom's session first used ``name`` (see the module docstring)."""
    first: datetime | None = None
    for anchor in atom.provenance.raw:
        records = _records(Path(anchor.path), anchor.byte_start, anchor.byte_end)
        found = first_use(records, name)
        if found is not None:
            return found
        if first is None:
            first = next((t for t in map(_time, records) if t is not None), None)
    return first


def first_use(records: list[dict[str, Any]], name: str) -> datetime | None:
    """The time of the first record that used ``name`` and did not fail."""
    pattern = skill_file(name)
    failed = _failed_calls(records)
    for rec in records:
        for call_id in _uses(rec, name, pattern):
            if call_id not in failed:
                t = _time(rec)
                if t is not None:
                    return t
    return None


def _uses(rec: dict[str, Any], name: str, pattern: re.Pattern[str]) -> list[str]:
    """Ids of the calls in one record that use ``name`` ("" for a call without an id)."""
    found: list[str] = []
    message: dict[str, Any] = rec["message"] if isinstance(rec.get("message"), dict) else {}
    if rec.get("type") == "assistant":
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            args: dict[str, Any] = block["input"] if isinstance(block.get("input"), dict) else {}
            tool = block.get("name")
            if tool == "Skill":
                value = args.get("skill") or args.get("command")
                words = value.strip().lstrip("/").split() if isinstance(value, str) else []
                hit = words[:1] == [name]  # "ns:name" is a plugin's skill: not this one
            else:
                hit = bool(pattern.search(json.dumps(args)))
            if hit:
                found.append(str(block.get("id") or ""))
    elif rec.get("type") == "user" and rec.get("isMeta") is True:
        # a skill the person loaded with a slash command (one answering a Skill call is the call)
        text = text_of(message.get("content"))
        m = SKILL_LOADED.match(text.strip())
        if m and not rec.get("sourceToolUseID") and PurePosixPath(m.group(1)).name == name:
            found.append("")
    elif rec.get("type") == "response_item":
        payload: dict[str, Any] = rec["payload"] if isinstance(rec.get("payload"), dict) else {}
        if payload.get("type") in _CODEX_CALLS:
            text = json.dumps(
                [payload.get("arguments"), payload.get("input"), payload.get("action")]
            )
            if pattern.search(text):
                found.append(str(payload.get("call_id") or ""))
    return found


def _failed_calls(records: list[dict[str, Any]]) -> set[str]:
    """Claude Code tool_use ids whose tool_result says is_error."""
    failed: set[str] = set()
    for rec in records:
        if rec.get("type") != "user":
            continue
        content = (rec.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("is_error") is True
            ):
                failed.add(str(block.get("tool_use_id") or ""))
    return failed


def _records(path: Path, start: int, end: int) -> list[dict[str, Any]]:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, start))
            data = fh.read(max(0, min(end - start, READ_CAP)))
    except OSError:
        return []
    out = []
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by the anchor's edge, or not JSON
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _time(rec: dict[str, Any]) -> datetime | None:
    value = rec.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        return cw.parse_time(value)
    except ValueError:
        return None


def side_at_use(
    switches: list[cw.Switch], atom: AtomTask, name: str
) -> tuple[str, str, datetime] | str:
    """(side, commit, when) installed when the atom's session used ``name``, per the switch
    log; ``"before"`` when the use came before the log's first switch (the folder was not
    exported by a logging xsky then), ``"unknown"`` when no time can be read back."""
    when = use_time(atom, name)
    if when is None:
        return "unknown"
    switch = cw.installed_at(switches, when)
    return (switch.side, switch.commit, when) if switch else "before"


def exported_side(folder: Path, atom: AtomTask, name: str) -> tuple[str, str | None, str] | None:
    """(side, commit, when) a Claude Code / Codex session's use of ``name`` is scored on:
    per the skill's switch log; ``main`` as it is now when there is no log or the use came
    before it (as before the export canary); None when the moment cannot be read back."""
    switches = read_switches(folder)
    found = side_at_use(switches, atom, name) if switches else "before"
    if found == "unknown":
        return None
    if isinstance(found, str):
        return "main", skill_git.branch_commit(folder, "main"), ""
    side, commit, when = found
    return side, commit, when.isoformat(timespec="seconds")


def scores_of(home: Path, inp: RouteInput) -> dict[str, list[Score]]:
    """UX scores bound to (skill, side, commit) for atoms that used skills of the library.

    An xsky agent's transcript says which side and commit it read (its first line). A Claude
    Code or Codex session read whatever the exported folder showed at the time it used the
    skill: the side of the switch in force then, from the skill's switch log
    (:func:`exported_side`); with no log (never exported by ``skills export`` since it logs),
    ``main`` as it is now.
    """
    sides = _transcript_skills(inp.path) if inp.kind == "xsky" else {}
    out: dict[str, list[Score]] = {}
    for ref in inp.scored_atoms:
        atom = read_atom(home, ref.traj_id, ref.atom_id)
        if atom is None or atom.provenance.used_skills_by != "measured":
            continue
        for name in atom.used_skills:
            if not NAME_RE.match(name):
                continue  # not a name the library can hold (a plugin's ``ns:name``)
            folder = skill_dir(home, name)
            if not skill_git.is_repo(folder):
                continue
            bound = (
                sides.get(name, ("main", skill_git.branch_commit(folder, "main"), ""))
                if inp.kind == "xsky"
                else exported_side(folder, atom, name)
            )
            if bound is None:
                continue  # a canary-exported skill used at a moment that cannot be read back
            side, commit, at = bound
            if commit:
                out.setdefault(name, []).append(
                    Score(
                        traj_id=atom.traj_id,
                        side=side,  # type: ignore[arg-type]  # as the transcript says; Score validates it
                        commit=commit,
                        score=atom.ux_score,
                        atom_id=atom.atom_id,
                        at=at or now_iso(),
                        # a model's UX judgement or the offline signals' heuristic, said as such
                        by="model-judged"
                        if atom.provenance.ux_score_by == "model"
                        else "heuristic",
                    )
                )
    return out


def _transcript_skills(path: str) -> dict[str, tuple[str, str | None, str]]:
    """Which side and commit of each bound skill an xsky agent read (its transcript's first
    line), with no time of use: the run was assigned its side for its whole length."""
    try:
        with open(path, encoding="utf-8") as fh:
            first = json.loads(fh.readline())
    except (OSError, ValueError):
        return {}
    found: dict[str, tuple[str, str | None, str]] = {}
    for item in first.get("skills", []) if isinstance(first, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item.get("commit"):
            found[item["name"]] = (str(item.get("side", "main")), str(item["commit"]), "")
    return found
