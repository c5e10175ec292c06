"""``starter.py skills …`` as a person uses it: sources, watch, scan --once, status, atoms, unwatch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Env
from tests.integration.test_cli_runs import starter
from tests.integration.test_skills_watch import start_pipeline
from tests.skills_fixtures import CC_TRAJ, Transcripts

pytestmark = pytest.mark.integration


async def test_sources_can_be_added_and_removed_and_a_broken_settings_file_is_never_overwritten(
    env: Env, transcripts: Transcripts, tmp_path: Path
):
    code, out, _ = await starter(env, "skills", "sources", "--json")
    assert code == 0 and {(s["kind"], s["path"]) for s in json.loads(out)} == {
        (k, str(p)) for k, p in transcripts.sources()
    }

    extra = tmp_path / "more-codex"
    project_file = Path(env.environ()["XSKY_PROJECT_DIR"]) / ".xsky" / "settings.json"
    code, out, err = await starter(env, "skills", "add-source", "codex", str(extra))
    said = " ".join(out.split())
    assert code == 0 and "registered codex" in said and "does not exist yet" in err
    assert f"in {project_file}" in said  # the project's file by default, and it says which
    code, out, _ = await starter(env, "skills", "sources", "--json")
    assert ("codex", str(extra)) in {(s["kind"], s["path"]) for s in json.loads(out)}
    code, out, _ = await starter(env, "skills", "remove-source", "codex", str(extra), "--project")
    assert code == 0 and "removed codex" in out
    code, _, err = await starter(env, "skills", "remove-source", "codex", str(extra), "--project")
    assert code == 2 and "is not registered" in err and "Traceback" not in err
    code, _, err = await starter(env, "skills", "add-source", "cursor", "/x")
    assert code == 2 and "unknown source kind 'cursor'" in err
    user_file = Path(env.environ()["XSKY_USER_SETTINGS"])
    code, out, _ = await starter(env, "skills", "add-source", "codex", str(extra), "--user")
    assert code == 0 and f"in {user_file}" in " ".join(out.split())
    code, out, _ = await starter(env, "skills", "remove-source", "codex", str(extra), "--user")
    assert code == 0 and "removed codex" in out

    settings = Path(env.environ()["XSKY_PROJECT_DIR"]) / ".xsky" / "settings.json"
    settings.write_text('{"skills": {"sources": [}')
    code, _, err = await starter(env, "skills", "add-source", "codex", "--project")
    assert code == 2 and "not valid JSON" in err and "nothing was changed" in err
    assert settings.read_text() == '{"skills": {"sources": [}'


async def test_watch_scan_once_status_atoms_and_unwatch(env: Env, transcripts: Transcripts):
    code, _, err = await starter(env, "skills", "scan", "--once")
    assert code == 2 and "no worker is serving the skill pipeline" in err and "starter.py up" in err

    await start_pipeline(env)
    # Intervals tick on multiples of the interval since the epoch: long ones, so that no tick
    # comes between these commands and the scan --once below.
    code, out, err = await starter(env, "skills", "watch", "--every", "200h")
    assert code == 0 and "created schedule xsky-skills-watch-" in out and "/schedules/" in out, err
    code, out, _ = await starter(env, "skills", "watch", "--every", "100h")
    assert code == 0 and "updated schedule" in out and "every 360000s" in out
    code, _, err = await starter(env, "skills", "watch", "--every", "soon")
    assert code == 2 and "write it as 30s, 2m, 1h" in err

    code, out, err = await starter(env, "skills", "scan", "--once")
    assert code == 0, err
    assert "6 delta(s): 6 committed" in out

    code, out, _ = await starter(env, "skills", "status", "--json")
    status = json.loads(out)
    assert status["schedule"]["exists"] and status["schedule"]["every"] == 360000
    assert status["cursors"]["files"] == 6 and status["cursors"]["bytesBehind"] == 0
    assert status["atoms"][CC_TRAJ] >= 2 and status["inFlight"] == []
    assert status["lastScan"]["files"] == 6

    code, out, _ = await starter(env, "skills", "status")
    assert code == 0 and "watch" in out and "atoms per trajectory" in out

    code, _, err = await starter(env, "skills", "atoms", "shopapp_3f2a9c1e")
    assert code == 2 and "matches 3 trajectories" in err
    code, out, _ = await starter(env, "skills", "atoms", CC_TRAJ, "--json")
    atoms = json.loads(out)
    assert (
        code == 0
        and atoms[0]["used_skills"] == ["pytest-runner"]
        and atoms[0]["atom_id"].endswith("_0001")
    )

    code, out, _ = await starter(env, "skills", "unwatch")
    assert code == 0 and "deleted schedule" in out
    code, out, _ = await starter(env, "skills", "unwatch")
    assert code == 0 and "nothing was watching" in out
