"""The tutorial (docs/tutorial.md) as a newcomer follows it: every command block it marks is run
in order, in bash, from a fresh HOME, against this test's own dev server, with no model
configured; each output block it shows is compared with what the commands printed.

Markers, an HTML comment just above a block:
- ``<!-- tutorial: run -->``: run it, it must exit 0 (``exit=2``: it must exit 2);
  ``until-output``: run it again until the output block after it is printed (an agent
  that has not got there yet), within a deadline;
- ``<!-- tutorial: output -->``: what the command above printed. Each line it shows must be
  printed, in that order (a shown block may leave lines out); ``…`` stands for what differs
  from run to run (ids, pids, paths), and table borders, padding, times of day and durations
  are not compared;
- ``<!-- tutorial: environment -->``: what the reader types once in their shell (activating
  the venv); the test does the same by putting this interpreter first on PATH.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, Env

pytestmark = pytest.mark.integration

TUTORIAL = ROOT / "docs" / "tutorial.md"
MARKED = re.compile(
    r"<!-- tutorial: (?P<kind>[\w-]+)(?P<opts>[^>]*?)\s*-->\s*\n```\w*\n(?P<body>.*?)^```",
    re.S | re.M,
)
BORDER = set("┏┓┗┛┡┩┌┐└┘├┤┬┴┼━─┳┻╇┃│ ")


@dataclass
class Step:
    command: str
    exit_code: int
    until_output: bool
    shown: list[str]


def steps(text: str) -> list[Step]:
    blocks = list(MARKED.finditer(text))
    # (a block opens with ```LANG, closes with ```: one opening per block)
    assert len(blocks) == len(re.findall(r"^```\w+\n", text, re.M)), (
        "every code block of docs/tutorial.md needs a <!-- tutorial: … --> marker above it"
    )
    out: list[Step] = []
    for b in blocks:
        kind, opts, body = b["kind"], b["opts"], b["body"]
        if kind == "run":
            code = re.search(r"exit=(\d+)", opts)
            out.append(Step(body, int(code[1]) if code else 0, "until-output" in opts, []))
        elif kind == "output":
            assert out and not out[-1].shown, f"an output block follows no command: {body[:60]!r}"
            out[-1].shown = [line for line in body.splitlines() if shown_line(line)]
        else:
            assert kind == "environment", f"unknown tutorial marker {kind!r}"
    return out


def normal(line: str) -> str:
    """A line as compared: no table rules or padding, no times of day or durations."""
    line = re.sub(r"[\s│┃]+", " ", line).strip()
    line = re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", line)
    return re.sub(r"\b\d+(\.\d+)? ?(ms|s)\b", "N s", line)


def shown_line(line: str) -> bool:
    return bool(line.strip()) and not set(line) <= BORDER and line.strip() != "…"


def pattern(shown: str) -> re.Pattern[str]:
    parts = re.split(r"\s*…\s*", normal(shown))
    return re.compile(".*".join(re.escape(p) for p in parts))


def missing(shown: list[str], printed: str) -> list[str]:
    """The shown lines not printed in order (empty when the output is as the tutorial says)."""
    lines = [normal(line) for line in printed.splitlines()]
    at = 0
    for i, line in enumerate(shown):
        p = pattern(line)
        while at < len(lines) and not p.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return shown[i:]
        at += 1
    return []


async def bash(command: str, environ: dict[str, str]) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        "set -eo pipefail\n" + command,
        env=environ,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


def test_every_block_of_the_tutorial_is_marked_and_most_commands_show_their_output():
    found = steps(TUTORIAL.read_text(encoding="utf-8"))
    # (the one that writes the plan prints nothing)
    assert len(found) >= 8 and len([s for s in found if not s.shown]) == 1


@pytest.mark.timeout(180)
async def test_the_tutorial_runs_as_written_from_a_fresh_home(env: Env):
    # A home with a short path: the CLI prints 160 columns to a pipe, and a longer path than
    # the reader's ~ would wrap the lines the tutorial shows whole.
    home = Path(tempfile.mkdtemp(prefix="xt-", dir="/tmp"))
    environ = env.environ()
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "XSKY_MODEL"):  # offline, as a newcomer is
        environ.pop(var, None)
    environ.update(
        HOME=str(home),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}",
    )
    try:
        for step in steps(TUTORIAL.read_text(encoding="utf-8")):
            deadline = time.monotonic() + 20
            while True:
                code, printed = await bash(step.command, environ)
                left = missing(step.shown, printed)
                if not (step.until_output and left) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.3)
            assert code == step.exit_code, f"{step.command}\nexited {code}:\n{printed}"
            assert not left, (
                f"{step.command}\ndid not print, in order:\n"
                + "\n".join(left)
                + f"\n--- it printed:\n{printed}"
            )
    finally:  # the worker `up` started, whatever happened
        await bash("python starter.py down", environ)
        shutil.rmtree(home, ignore_errors=True)
