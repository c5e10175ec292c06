"""`plan "…"` says what `validate` of the plan it prints would warn of (walk12: the offline
planner made "list the files" (or "think of three names") an llm agent with nothing to read, which fails at once on a worker
without a model; only a later `validate plan.xml` said so). The XML alone stays on stdout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _plan(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XSKY_MODEL", "XSKY_COORDINATOR_MODEL")}
    env |= {"TEMPORAL_ADDRESS": "127.0.0.1:1", "XSKY_HOME": str(tmp_path / "home")}
    env |= {"HOME": str(tmp_path), "COLUMNS": "400"}
    return subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), "plan", text],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )


def test_a_planned_agent_that_fails_offline_is_warned_of(tmp_path: Path) -> None:
    done = _plan("1. think of three names for a cat 2. pick the best", tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "warning: agent 1 (llm) has no <input> and depends on no agent" in said
    assert "warning" not in done.stdout and done.stdout.lstrip().startswith("<workflow")


def test_a_plan_without_such_an_agent_has_no_warning(tmp_path: Path) -> None:
    done = _plan("1. open https://example.com 2. summarise it", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning:" not in done.stderr
