"""A misspelt XSKY_* setting was ignored without a word (XSKY_TASKQUEUE=foo: the worker and
the runs went to queue 'xsky')."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT
from xsky.config import SETTING_NAMES, misspelt_settings


def test_a_name_close_to_a_setting_is_said_and_a_persons_own_is_not() -> None:
    said = misspelt_settings(
        {"XSKY_TASKQUEUE": "foo", "XSKY_TASK_QUEUE": "q", "XSKY_MY_MCP_TOKEN": "t", "XSKY_V3": "x"}
    )
    assert said == [
        "XSKY_TASKQUEUE is not a setting xsky reads (ignored) — did you mean XSKY_TASK_QUEUE?"
    ]
    assert misspelt_settings({name: "1" for name in SETTING_NAMES}) == []


def test_the_names_xsky_reads_are_all_known() -> None:
    """Every XSKY_* name the product's code reads is in SETTING_NAMES (else it would be taken for
    a misspelling of another once it is close to one)."""
    found = subprocess.run(
        ["grep", "-rhoE", r"XSKY_[A-Z0-9_]+", "xsky", "activities", "client", "cli", "workflows",
         "worker.py", "starter.py", "--include=*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    read = {n for n in found if not n.startswith("XSKY_V") and n != "XSKY_"}
    assert read - SETTING_NAMES == set()


def test_the_cli_warns_once_and_goes_on(tmp_path) -> None:
    env = {"PATH": "/usr/bin:/bin", "XSKY_HOME": str(tmp_path), "XSKY_TAKS_QUEUE": "foo"}
    plan = tmp_path / "p.xml"
    plan.write_text(
        '<workflow name="w"><agent name="shell" id="1"><task>t</task></agent></workflow>'
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), "validate", str(plan)],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert "did you mean XSKY_TASK_QUEUE?" in done.stderr, done.stderr
    assert done.stderr.count("XSKY_TAKS_QUEUE") == 1
