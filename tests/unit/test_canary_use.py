"""When a Claude Code or Codex session used a skill, and the score it gives to the side
installed then (scores_of with the switch log)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from activities.fsio import write_json
from activities.skills import canary_export as ce
from activities.skills import git as skill_git
from activities.skills.canary_use import first_use, scores_of, use_time
from tests.integration.skill_library_helpers import make_skill
from tests.integration.test_canary_export import DESCRIPTION, NAME, cc_session
from xsky.skills import canary_window as cw
from xsky.skills.atoms import AtomTask, Provenance, RawAnchor
from xsky.skills.layout import atom_path
from xsky.skills.models import AtomRef, RouteInput

T0 = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)


def write(path: Path, lines: list[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(x) + "\n" for x in lines)
    path.write_text(data)
    return len(data.encode())


def atom_over(
    path: Path, size: int, traj: str = "traj_cc_infra_aaaa0001", start: int = 0
) -> AtomTask:
    return AtomTask(
        atom_id=f"atom_{traj}_0001",
        traj_id=traj,
        offset_start=0,
        offset_end=100,
        intent="deploy the billing service with helm",
        summary="deployed",
        used_skills=[NAME],
        ux_score=8,
        provenance=Provenance(
            raw=[RawAnchor(path=str(path), byte_start=start, byte_end=size)],
            used_skills_by="measured",
        ),
    )


def times(lines: list[dict[str, Any]]) -> list[datetime]:
    return [cw.parse_time(x["timestamp"]) for x in lines]


def test_the_use_is_the_skill_call_not_the_prompt_and_a_failed_call_is_not_use(
    tmp_path: Path,
) -> None:
    lines = cc_session("billing", T0 + timedelta(hours=1), skill_fails_first=True)
    size = write(tmp_path / "s.jsonl", lines)
    t = times(lines)
    # lines: prompt, failed Skill call, its error, the Skill call that loaded it, …
    assert use_time(atom_over(tmp_path / "s.jsonl", size), NAME) == t[3]
    read = cc_session("billing", T0 + timedelta(hours=2), read_file=True)
    size = write(tmp_path / "r.jsonl", read)
    assert use_time(atom_over(tmp_path / "r.jsonl", size), NAME) == times(read)[1]


def test_a_plugin_namespaced_skill_of_the_same_name_is_not_the_library_skill(
    tmp_path: Path,
) -> None:
    lines = cc_session("billing", T0, skill=f"infra-plugin:{NAME}")
    assert first_use(lines, NAME) is None
    # without a use to point at, the atom's first record stands in (the start of its task)
    size = write(tmp_path / "p.jsonl", lines)
    assert use_time(atom_over(tmp_path / "p.jsonl", size), NAME) == times(lines)[0]


def test_a_codex_rollout_that_opens_the_skill_file_is_timed_at_that_call() -> None:
    call = {
        "timestamp": "2026-11-02T07:15:02.120Z",
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps(
                {"command": ["bash", "-lc", f"cat ~/.codex/skills/{NAME}/SKILL.md"]}
            ),
            "call_id": "call_7Hk2",
        },
    }
    prompt = {
        "timestamp": "2026-11-02T07:15:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": f"use {NAME} skills/{NAME}/SKILL.md"}],
        },
    }
    assert first_use([prompt, call], NAME) == T0 + timedelta(hours=7, minutes=15, seconds=2.12)


def _route(home: Path, atom: AtomTask) -> RouteInput:
    write_json(atom_path(home, atom.traj_id, atom.atom_id), atom.model_dump(mode="json"))
    return RouteInput(
        path=atom.provenance.raw[0].path,
        kind="claude-code",
        new_atoms=[],
        scored_atoms=[AtomRef(traj_id=atom.traj_id, atom_id=atom.atom_id)],
    )


def test_scores_go_to_the_side_installed_at_the_time_of_use_bound_to_its_commit(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    repo = make_skill(home, NAME, DESCRIPTION, staging_body="# x\n\nSTAGING.\n")
    main, staging = skill_git.branch_commit(repo, "main"), skill_git.branch_commit(repo, "staging")
    assert main and staging

    # never exported with a log: main as it is now (as before the export canary)
    early = cc_session("a", T0)
    size = write(tmp_path / "a.jsonl", early)
    [score] = scores_of(home, _route(home, atom_over(tmp_path / "a.jsonl", size)))[NAME]
    assert (score.side, score.commit) == ("main", main)

    index = cw.window_of(T0) + 1  # the first switch comes after the early session
    while cw.planned_side(NAME, staging, index) != "staging":
        index += 1
    start = cw.window_start(index)
    ce.export_skill(repo, NAME, tmp_path / "skills", True, start)
    after = cc_session("b", start + timedelta(hours=1))
    size = write(tmp_path / "b.jsonl", after)
    [score] = scores_of(
        home, _route(home, atom_over(tmp_path / "b.jsonl", size, "traj_cc_infra_bbbb0002"))
    )[NAME]
    assert (score.side, score.commit, score.score) == ("staging", staging, 8)
    assert cw.parse_time(score.at) == times(after)[1].replace(microsecond=0)

    # a use before the log's first switch: the folder was not a logged export then → main
    [score] = scores_of(home, _route(home, atom_over(tmp_path / "a.jsonl", 10**6)))[NAME]
    assert (score.side, score.commit) == ("main", main)

    # a self-reported use scores nothing (only measured use counts)
    reported = atom_over(tmp_path / "b.jsonl", size, "traj_cc_infra_cccc0003")
    reported.provenance.used_skills_by = "self-reported"
    assert scores_of(home, _route(home, reported)) == {}


def test_a_slash_command_use_is_timed_when_claude_code_loaded_the_skill(tmp_path: Path) -> None:
    from tests.unit.test_transcripts_claude import slash_session

    lines = slash_session()
    loaded = next(x for x in lines if x.get("isMeta"))
    assert first_use(lines, NAME) == cw.parse_time(loaded["timestamp"])
    assert first_use(lines, "other-skill") is None
    # the load that answers a Skill call is timed by the call (the record before it)
    called = cc_session("billing", T0)
    call = next(x for x in called if "Skill" in json.dumps(x.get("message", {})))
    assert first_use(called, NAME) == cw.parse_time(call["timestamp"])
