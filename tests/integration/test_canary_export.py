"""The export canary end to end on a real dev server: ``skills export --canary`` switches a
symlink between main and staging per window, Claude Code sessions that used the exported skill
are appended on each side and scanned, their scores land on the side installed at their time,
and the canary promotes (one case) or discards (the other) the staging version in git.

Six-hour windows are simulated: each "cron run" of the export is called with the moment it
stands for (``now``), and the sessions of that window carry timestamps inside it, as Claude
Code writes them. Everything else — the scan, the atoms, the scores, the entity's decision —
is the real pipeline.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from activities.skills import canary_export
from activities.skills import git as skill_git
from activities.skills.files import SCORES
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.skill_library_helpers import make_skill, settled_view, view
from tests.integration.test_skills_watch import scan_once, start_pipeline
from xsky.skills import canary
from xsky.skills import canary_window as cw

pytestmark = pytest.mark.integration

NAME = "deploy-helm"
DESCRIPTION = (
    "Deploy a service to a Kubernetes cluster with Helm and check the rollout. "
    "Use when asked to deploy, upgrade or roll back a service."
)
T0 = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)  # the simulated canary starts here
PROJECT = "-home-dev-infra"


# -- Claude Code-shaped sessions (written here, in the shape of Claude Code 2.1 transcripts) ---------


def _line(kind: str, sid: str, parent: str | None, at: datetime, **rest: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/infra",
        "sessionId": sid,
        "version": "2.1.7",
        "gitBranch": "main",
        "type": kind,
        "uuid": str(uuid.uuid4()),
        "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        **rest,
    }


def _assistant(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "message": {
            "model": "claude-sonnet-4-5-20250929",
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 80},
        },
        "requestId": f"req_{uuid.uuid4().hex[:24]}",
    }


def _result(call: str, text: str, error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"tool_use_id": call, "type": "tool_result", "content": text}
    if error:
        block["is_error"] = True
    return {"message": {"role": "user", "content": [block]}}


def cc_session(
    service: str,
    start: datetime,
    failures: int = 0,
    read_file: bool = False,
    skill: str = NAME,
    skill_fails_first: bool = False,
) -> list[dict[str, Any]]:
    """One Claude Code session: a prompt, the skill used (a ``Skill`` call and its result, or a
    Read of its SKILL.md), ``failures`` failing helm runs, a successful one and the answer."""
    sid = str(uuid.uuid4())
    t = start
    out: list[dict[str, Any]] = []

    def add(kind: str, seconds: float, **rest: Any) -> None:
        nonlocal t
        t += timedelta(seconds=seconds)
        out.append(_line(kind, sid, out[-1]["uuid"] if out else None, t, **rest))

    add(
        "user",
        0,
        message={
            "role": "user",
            "content": f"Deploy the {service} service to the staging cluster with helm and check the rollout.",
        },
    )
    if skill_fails_first:  # a failed Skill call is not use (the skill was not loaded)
        bad = f"toolu_{uuid.uuid4().hex[:20]}"
        add("assistant", 2, **_assistant([_tool(bad, "Skill", {"skill": skill})], "tool_use"))
        add(
            "user",
            1,
            **_result(bad, f"<tool_use_error>Unknown skill: {skill}</tool_use_error>", True),
        )
    call = f"toolu_{uuid.uuid4().hex[:20]}"
    if read_file:
        path = f"/home/dev/.claude/skills/{skill}/SKILL.md"
        add("assistant", 3, **_assistant([_tool(call, "Read", {"file_path": path})], "tool_use"))
        add("user", 1, **_result(call, f"     1→---\n     2→name: {skill}\n"))
    else:
        add("assistant", 3, **_assistant([_tool(call, "Skill", {"skill": skill})], "tool_use"))
        add(
            "user",
            1,
            **_result(call, f"Launching skill: {skill}"),
            toolUseResult={"success": True, "commandName": skill},
        )
        add(
            "user",
            0.1,
            message={
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"Base directory for this skill: /home/dev/.claude/skills/{skill}\n\n# {skill}\n",
                    }
                ],
            },
            isMeta=True,
            sourceToolUseID=call,
        )
    command = f"helm upgrade --install {service} ./charts/{service} -n staging --wait"
    for n in range(failures):
        run = f"toolu_{uuid.uuid4().hex[:20]}"
        add("assistant", 4, **_assistant([_tool(run, "Bash", {"command": command})], "tool_use"))
        add(
            "user",
            20,
            **_result(
                run, f"Error: UPGRADE FAILED: timed out waiting for the condition ({n + 1})", True
            ),
        )
    run = f"toolu_{uuid.uuid4().hex[:20]}"
    add("assistant", 4, **_assistant([_tool(run, "Bash", {"command": command})], "tool_use"))
    add("user", 30, **_result(run, f'Release "{service}" has been upgraded. Happy Helming!'))
    add(
        "assistant",
        3,
        **_assistant(
            [
                {
                    "type": "text",
                    "text": f"{service} is deployed to staging; the rollout is complete.",
                }
            ],
            "end_turn",
        ),
    )
    return out


def _tool(call: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": args}


def write_session(root: Path, lines: list[dict[str, Any]]) -> Path:
    path = root / PROJECT / f"{lines[0]['sessionId']}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# -- the loop --------------------------------------------------------------------------------------


@dataclass
class Claude:
    root: Path  # ~/.claude/projects
    skills: Path  # ~/.claude/skills: where the export puts the skill


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Claude:
    """A Claude Code root registered as the only source in a project settings file."""
    c = Claude(tmp_path / "claude" / "projects", tmp_path / "claude" / "skills")
    c.root.mkdir(parents=True)
    project = tmp_path / "project"
    (project / ".xsky").mkdir(parents=True)
    settings = {"skills": {"sources": [{"kind": "claude-code", "path": str(c.root)}]}}
    (project / ".xsky" / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))
    return c


def stored_scores(repo: Path) -> list[dict[str, Any]]:
    path = repo / SCORES
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


async def run_canary(
    env: Env, claude: Claude, repo: Path, failures: dict[str, int]
) -> dict[str, list[str]]:
    """Cron runs of the export, window after window, and in each window Claude Code sessions
    that use the exported skill, scanned as they come, until each side has MIN_SCORES of them.
    Returns the session files per side."""
    staging = skill_git.branch_commit(repo, "staging")
    assert staging
    per_side: dict[str, list[str]] = {"main": [], "staging": []}
    index = cw.window_of(T0)
    link = claude.skills / NAME
    while min(len(v) for v in per_side.values()) < canary.MIN_SCORES:
        start = cw.window_start(index)
        placed = canary_export.export_skill(
            repo, NAME, claude.skills, True, start + timedelta(minutes=2)
        )
        side = cw.planned_side(NAME, staging, index)
        assert placed.side == side and link.is_symlink()
        shown = (link / "SKILL.md").read_text()
        assert ("STAGING VERSION" in shown) == (side == "staging"), (
            "the link shows the planned side"
        )
        wanted = canary.MIN_SCORES - len(per_side[side])
        for k in range(min(5, max(wanted, 0))):
            n = len(per_side[side])
            lines = cc_session(
                f"svc{side[0]}{n}",
                start + timedelta(minutes=10 + 40 * k),
                failures=failures[side],
                read_file=n % 4 == 3,  # some sessions read the SKILL.md instead of the Skill tool
            )
            per_side[side].append(write_session(claude.root, lines).name)
        if wanted > 0:
            await scan_once(env.client, env.settings.skills_queue)
        index += 1
    return per_side


async def the_canary_decides(
    env: Env, claude: Claude, failures: dict[str, int]
) -> tuple[Path, str, str]:
    await start_pipeline(env)
    home = env.settings.skills_home
    # staging as an entity's edit leaves it: it beat main in its paired test, so the canary
    # alone decides between promoting and discarding it
    repo = make_skill(
        home,
        NAME,
        DESCRIPTION,
        staging_body=f"# {NAME}\n\nSTAGING VERSION of {NAME}.\n",
        paired=True,
    )
    main, staging = skill_git.branch_commit(repo, "main"), skill_git.branch_commit(repo, "staging")
    assert main and staging
    # Re-running the export with the real clock, as a user's cron does: the command works
    # and says which side it shows and when it switches next.
    from tests.integration.test_cli_runs import starter

    code, out, err = await starter(
        env, "skills", "export", "--to", str(claude.skills), "--canary", "--json"
    )
    assert code == 0, err
    said = json.loads(out)
    assert said["exported"] == [NAME] and said["canary"][0]["skill"] == NAME
    assert said["canary"][0]["side"] in ("main", "staging") and said["canary"][0]["next"]
    assert (claude.skills / NAME).is_symlink()
    real_switch = canary_export.read_switches(repo)[-1]

    await run_canary(env, claude, repo, failures)

    async def decided() -> None:
        if skill_git.branch_commit(repo, "staging") == staging:
            v = await view(env, NAME)
            raise AssertionError(f"staging still under canary: {v.canary} {v.decision}")

    await eventually(decided, 180, interval=0.5)
    # Every session was scored on the side its window showed, bound to that side's commit.
    log = canary_export.read_switches(repo)
    assert log[0] == real_switch and len(log) > 2
    return repo, main, staging


def figures(message: str) -> dict[str, float]:
    """n and mean per side from a promotion's or discard's message ("Figures: main n=20 mean=…")."""
    m = re.search(r"main n=(\d+) mean=([\d.]+); staging n=(\d+) mean=([\d.]+)", message)
    assert m, message
    return {
        "n_main": int(m[1]),
        "mean_main": float(m[2]),
        "n_staging": int(m[3]),
        "mean_staging": float(m[4]),
    }


@pytest.mark.timeout(900)
async def test_a_staging_version_scored_through_the_exported_symlink_is_promoted(
    claude: Claude, env: Env
):
    # main's sessions fight helm twice each; staging's deploy at the first try
    repo, main, staging = await the_canary_decides(env, claude, {"main": 2, "staging": 0})
    promoted = skill_git.message(repo, skill_git.branch_commit(repo, "main") or "")
    assert promoted.startswith("promote staging") and "Mann-Whitney" in promoted, promoted
    assert f"Canary-Of: {staging}" in promoted
    f = figures(promoted)
    # every session counted once, on the side its window showed: the sides' means differ as
    # their sessions do (a mix-up would pull them together)
    assert f["n_main"] == f["n_staging"] == canary.MIN_SCORES, f
    assert f["mean_staging"] > f["mean_main"], f
    # the next cron run shows the new main through the link, and logs it
    new_main = skill_git.branch_commit(repo, "main")
    later = canary_export.export_skill(repo, NAME, claude.skills, True)
    assert later.side == "main" and later.commit == new_main
    assert "STAGING VERSION" in (claude.skills / NAME / "SKILL.md").read_text()
    assert canary_export.read_switches(repo)[-1].commit == new_main


@pytest.mark.timeout(900)
async def test_a_staging_version_scored_worse_through_the_exported_symlink_is_discarded(
    claude: Claude, env: Env
):
    # staging's sessions fail helm four times each before it works; main's deploy cleanly
    repo, main, staging = await the_canary_decides(env, claude, {"main": 0, "staging": 4})
    tags = {t["tag"]: t["message"] for t in skill_git.tags(repo)}
    assert f"discarded/{staging[:12]}" in tags, tags
    message = tags[f"discarded/{staging[:12]}"]
    assert "worse than main" in message, message
    f = figures(message)
    assert f["n_main"] == f["n_staging"] == canary.MIN_SCORES, f
    assert f["mean_main"] > f["mean_staging"] + canary.MARGIN, f
    assert skill_git.branch_commit(repo, "main") == main
    # the next cron run takes the discarded version out of the folder (a new staging version
    # the offline editor may have written meanwhile would draw its own windows)
    later = canary_export.export_skill(repo, NAME, claude.skills, True)
    assert later.commit != staging
    assert "STAGING VERSION" not in (claude.skills / NAME / "SKILL.md").read_text()


async def test_the_fourteen_days_count_from_the_first_window_that_showed_staging(
    claude: Claude, env: Env
):
    from cli.skills_export_cmd import _canary_line, _tell
    from tests.integration.skill_library_helpers import entity
    from xsky.skills.models import RecordScores

    await start_pipeline(env)
    repo = make_skill(env.settings.skills_home, NAME, DESCRIPTION, staging_body="# x\n\nSTAGING.\n")
    staging = skill_git.branch_commit(repo, "staging") or ""
    await entity(env, NAME, "record_scores", RecordScores(scores=[]))

    async def loaded() -> None:
        assert (await view(env, NAME)).staging_commit == staging

    await eventually(loaded, 30)
    # the export canary starts a day after the staging commit (its first staging window then)
    index = cw.window_of(datetime.now(UTC) + timedelta(days=1))
    while cw.planned_side(NAME, staging, index) != "staging":
        index += 1
    first = cw.window_start(index) + timedelta(minutes=1)
    placed = canary_export.export_skill(repo, NAME, claude.skills, True, first)
    line = _canary_line(env.settings.skills_home, placed, first)
    assert line and line["since"] == first.isoformat(timespec="seconds")
    assert await _tell(env.settings, [line]) == ""

    async def moved() -> list[str]:
        texts = [e.text for e in (await view(env, NAME)).events if e.kind == "canary"]
        assert texts, "the entity has not heard of the export"
        return texts

    texts = await eventually(moved, 30)
    assert texts == [f"exported under canary since {line['since'][:19]}: 14 days from then"]
    # told again (every cron run tells), or told of an earlier moment: the clock stays
    earlier = {**line, "since": (first - timedelta(hours=20)).isoformat(timespec="seconds")}
    assert await _tell(env.settings, [line, earlier]) == ""

    async def settled_now() -> Any:
        return await settled_view(env, NAME)  # both signals handled, nothing in flight

    settled_v = await eventually(settled_now, 30)
    assert [e.text for e in settled_v.events if e.kind == "canary"] == texts
