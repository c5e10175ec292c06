"""Every command of starter.py, driven in-process through a table of the situations people
meet — a bad input, an unreachable server, no worker, an unknown run, an ended run — must
print one sentence with a fix and exit 2 (never a traceback). A command added to the CLI
without rows here fails the coverage check."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import socket
import traceback
import uuid
from dataclasses import dataclass

import pytest

from cli import render
from cli.main import build_parser, main
from client import XSky
from tests.conftest import ROOT, Env
from tests.integration.helpers import noop, plan

pytestmark = pytest.mark.integration

ENDED = "{ended}"  # replaced by the id of a run that completed
UNKNOWN = "xsky-no-such-run-0000"
DIAMOND = str(ROOT / "examples/diamond.xml")


@dataclass(frozen=True)
class Case:
    situation: str  # bad-input | unreachable | remote | no-worker | unknown-run | ended-run
    argv: tuple[str, ...]
    says: str  # a piece of the one sentence
    code: int = 2


def cases() -> list[Case]:
    table: list[Case] = []
    steer = {
        "pause": (),
        "resume": (),
        "cancel": (),
        "retry": ("T-1",),
        "skip": ("T-1",),
        "nudge": ("T-1", "hurry"),
        "answer": ("Q-1", "yes"),
        "approve": ("A-1",),
        "replan": ("add a step",),
        "approve-plan": (),
        "end": (),
        "budget": ("tokens=200000",),
        "reset": ("T-1",),
        "timeout": ("T-1", "60"),
    }
    # retry on an ended run starts a follow-up run: refused when the task completed there
    ended_says = {"retry": "T-1 completed in"}
    for command, rest in steer.items():
        table += [
            Case("unknown-run", (command, UNKNOWN, *rest), f"no run with id {UNKNOWN}"),
            Case(
                "ended-run",
                (command, ENDED, *rest),
                ended_says.get(command, "has already ended (completed)"),
            ),
            Case("unreachable", (command, "xsky-x", *rest), "cannot reach Temporal"),
        ]
    looking = {
        "status": (),
        "result": (),
        "requests": (),
        "log": ("T-1",),
        "follow": (),
        "status --follow": (),
        "events": (),
        "events --follow": (),
    }
    for looked, rest in looking.items():
        command, *flags = looked.split()
        table += [
            Case("unknown-run", (command, UNKNOWN, *flags, *rest), f"no run with id {UNKNOWN}"),
            Case("unreachable", (command, "xsky-x", *flags, *rest), "cannot reach Temporal"),
        ]
    table += [
        # bad input: what was wrong and how to write it
        Case("bad-input", ("validate", "no/such/plan.xml"), "no such file"),
        Case(
            "bad-input",
            ("validate", str(ROOT / "examples/invalid/many_problems.xml")),
            "many_problems.xml:3:3:",
        ),
        Case("bad-input", ("run", "no/such/plan.xml"), "no such file"),
        Case("bad-input", ("convert", "no/such/plan.xml"), "no such file"),
        Case("unknown-run", ("fork", UNKNOWN, "T-1"), f"no run with id {UNKNOWN}"),
        Case("unreachable", ("fork", "xsky-x", "T-1"), "cannot reach Temporal"),
        Case("bad-input", ("fork", ENDED, "T-99"), "no task 'T-99' in the run's last plan"),
        Case("bad-input", ("fork", ENDED, "T-1", "--id", "bad id/"), "run id 'bad id/'"),
        Case("unknown-run", ("files", UNKNOWN), f"no run with id {UNKNOWN}"),
        Case("unreachable", ("files", "xsky-x"), "cannot reach Temporal"),
        Case("bad-input", ("files", ENDED, "../../etc/passwd"), "is outside the run's workspace"),
        Case("bad-input", ("fork", ENDED, "T-1", "--id", ENDED, "--follow"), "already exists"),
        Case("bad-input", ("diff", ENDED, ENDED), "give two different runs to compare"),
        Case("unknown-run", ("diff", ENDED, UNKNOWN), f"no run with id {UNKNOWN}"),
        Case(
            "bad-input",
            ("convert", str(ROOT / "examples/invalid/many_problems.xml")),
            "many_problems.xml:3:3:",
        ),
        Case("bad-input", ("run", DIAMOND, "--var", "topic=x", "--id", ENDED), "already exists"),
        Case(
            "bad-input", ("run", DIAMOND, "--var", "topic=x", "--id", "bad id/"), "run id 'bad id/'"
        ),
        Case(
            "bad-input", ("plan", "xsky-no-such-run-0000"), "no run with id xsky-no-such-run-0000"
        ),
        Case("bad-input", ("validate", "/dev/zero"), "over the 5,242,880-byte limit of a plan"),
        Case(
            "bad-input",
            ("validate", DIAMOND, "--var", "tpoic=x"),
            "the plan has no such name (its names: topic)",
        ),
        Case(
            "bad-input",
            ("replan", ENDED, "--xml", str(ROOT / "examples/invalid/cycle.xml")),
            "cycle.xml:3:3: dependency cycle",
        ),
        Case("bad-input", ("run", DIAMOND, "--var", "topic"), "write it as --var name=value"),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "tpoic=x"),
            "the plan has no such name (its names: topic)",
        ),
        Case("bad-input", ("run", DIAMOND, "--max-parallel", "0"), "--max-parallel"),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--budget", "tokns=5"),
            "--budget: unknown limit 'tokns' (did you mean tokens?)",
        ),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--agent-budget", "agents=5"),
            "agents is a limit of the whole run",
        ),
        Case("bad-input", ("budget", ENDED, "tokens=0"), "tokens must be more than 0"),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--hold-on-failure", "-5"),
            "--hold-on-failure",
        ),
        Case("bad-input", ("retry", ENDED, "T-99"), "no task 'T-99' in the run's last plan"),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--allow-host", "127.0.0.1"),
            "--allow-host 127.0.0.1: 127.0.0.1 is a loopback address (this machine); name the port",
        ),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--allow-host", "*.example.com"),
            "no scheme, path or wildcard",
        ),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--allow-host", "169.254.169.254:80"),
            "no rule can open it",
        ),
        Case(
            "bad-input",
            ("plan", "fetch a page", "--allow-host", "127.0.0.1:8080"),
            "add --run to start one",
        ),
        Case(
            "bad-input",
            ("plan", "fetch a page", "--run", "--allow-host", "localhost"),
            "name the port, e.g. localhost:8080",
        ),
        Case("bad-input", ("skills", "scan", "--once", "--timeout", "0"), "--timeout 0"),
        Case(
            "bad-input",
            ("status", ENDED, "--follow", "--status", "failed"),
            "--follow shows the whole board",
        ),
        Case("ended-run", ("follow", ENDED), "has ended (completed)", code=0),
        Case("ended-run", ("status", ENDED, "--follow"), "has ended (completed)", code=0),
        Case("bad-input", ("run",), "the following arguments are required: plan"),
        Case("bad-input", ("status", ENDED, "--limit", "0"), "--limit takes 1 to 2000"),
        Case("bad-input", ("ledger", ENDED, "--limit", "0"), "--limit takes 1 to 2000"),
        Case("bad-input", ("ledger", UNKNOWN), f"no run with id {UNKNOWN}"),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--delegate", "shell(("),
            "--delegate permission rule 'shell((' is not valid",
        ),
        Case(
            "bad-input",
            ("run", DIAMOND, "--var", "topic=x", "--coordinator", "loud"),
            "--coordinator 'loud' is not one of auto, act, advise, off",
        ),
        Case("bad-input", ("result", ENDED, "--agent", "99"), "no agent 99"),
        Case("bad-input", ("log", ENDED, "T-99"), "no task 'T-99'"),
        Case("bad-input", ("replan", ENDED), "give what to change as a PROMPT"),
        Case("bad-input", ("nudge", ENDED, "T-1", "  "), "the nudge message is empty"),
        Case("bad-input", ("list", "--query", "((("), "the list query was refused"),
        Case("bad-input", ("plan", "   "), "the request is empty"),
        Case(
            "bad-input",
            ("plan", "xsky-no-such-run-0000", "--history"),
            "no run with id xsky-no-such-run-0000",
        ),
        Case("bad-input", ("roles", "show", "no-such-role"), "no-such-role"),
        Case("bad-input", ("permissions", "check", "teleport", "x"), "teleport"),
        Case("bad-input", ("permissions", "log", UNKNOWN), f"no run with id {UNKNOWN}"),
        Case("bad-input", ("permissions", "check", "mcp__a.b__c"), "mcp__a.b__c"),
        Case(
            "bad-input", ("mcp", "check", "no-such-server"), "no MCP server named 'no-such-server'"
        ),
        Case("bad-input", ("mcp", "list", "--timeout", "0"), "--timeout 0"),
        Case("bad-input", ("skills", "add-source", "nokind"), "nokind"),
        Case("bad-input", ("skills", "watch", "--every", "soon"), "soon"),
        Case("bad-input", ("skills", "show", "no-such-skill"), "no-such-skill"),
        Case("bad-input", ("skills", "history", "no-such-skill"), "no-such-skill"),
        Case("bad-input", ("skills", "candidates", "no-such-skill"), "no-such-skill"),
        Case("bad-input", ("skills", "canary", "no-such-skill"), "no-such-skill"),
        Case("bad-input", ("skills", "promote", "no-such-skill"), "no-such-skill"),
        Case("bad-input", ("skills", "discard", "no-such-skill"), "no-such-skill"),
        Case("bad-input", ("skills", "atoms", "traj_nope"), "nothing ingested yet"),
        Case(
            "bad-input",
            ("skills", "remove-source", "claude-code", "/no/such/folder"),
            "/no/such/folder",
        ),
        Case("bad-input", ("skills", "export", "--to", str(ROOT / "README.md")), "README.md"),
        Case("bad-input", ("server", "--ui-port", "many"), "is not a port number"),
        Case("bad-input", ("ui", "--port", "0"), "--port 0: give a port from 1 to 65535"),
        Case("bad-input", ("ui", "--host", "no-such-host.invalid"), "cannot listen on"),
        Case("bad-input", ("ui", UNKNOWN, "--port", "1"), f"no run with id {UNKNOWN}"),
        Case("bad-input", ("demo", "--fast"), "unknown option --fast; `starter.py demo --help`"),
        Case("bad-input", ("down", "--now"), "unknown option --now; `starter.py down --help`"),
        # a mistyped command, sub-command, option or choice: the nearest one is named
        Case("bad-input", ("stauts", ENDED), "unknown command 'stauts' — did you mean 'status'?"),
        Case("bad-input", ("skills", "lst"), "unknown skills command 'lst' — did you mean 'list'?"),
        Case(
            "bad-input",
            ("run", "--folow", DIAMOND),
            "unknown option --folow — did you mean --follow?",
        ),
        Case("bad-input", ("status", ENDED, "--limt", "5"), "did you mean --limit?"),
        Case("bad-input", ("list", "--status", "runing"), "did you mean 'running'?"),
        Case("bad-input", ("status", ENDED, "extra"), "unexpected argument 'extra'"),
        Case(
            "bad-input",
            ("skills", "add-source", "codex", "--user", "--project"),
            "not allowed with argument",
        ),
        Case("bad-input", ("result", ENDED, "--agent", "99", "--json"), "no agent 99"),
        # nothing answers at the address
        Case("unreachable", ("run", DIAMOND, "--var", "topic=x"), "cannot reach Temporal"),
        Case("unreachable", ("list",), "cannot reach Temporal"),
        Case("unreachable", ("gc",), "cannot reach Temporal"),
        Case("bad-input", ("gc", "--older-than", "-1"), "--older-than -1"),
        Case("bad-input", ("gc", "--run", UNKNOWN), f"holds nothing of {UNKNOWN}"),
        Case("unreachable", ("plan", "xsky-x"), "cannot reach Temporal"),
        Case(
            "unreachable",
            ("plan", "fetch a page then summarize it", "--run"),
            "cannot reach Temporal",
        ),
        Case("unreachable", ("permissions", "log", "xsky-x"), "cannot reach Temporal"),
        Case("unreachable", ("skills", "watch"), "cannot reach Temporal"),
        Case("unreachable", ("skills", "unwatch"), "cannot reach Temporal"),
        Case("unreachable", ("skills", "scan", "--once"), "cannot reach Temporal"),
        Case("remote", ("server",), "a local server cannot be started for a remote host"),
        Case("remote", ("up",), "a local server cannot be started for a remote host"),
        # the server is up, no worker serves the queues: said before anything starts
        Case("no-worker", ("run", DIAMOND, "--var", "topic=x"), "no worker serves the task queue"),
        Case(
            "no-worker",
            ("plan", "fetch a page then summarize it", "--run"),
            "no worker serves the task queue",
        ),
        Case("no-worker", ("skills", "scan", "--once"), "no worker"),
    ]
    return table


def commands() -> set[str]:
    """Every command and sub-command the parser has (``skills watch``, ``permissions log`` …)."""
    names: set[str] = set()
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                subs = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
                names |= {f"{name} {s}" for a in subs for s in a.choices} if subs else {name}
    return names


def covered(argv: tuple[str, ...]) -> str:
    two = ("skills", "permissions", "mcp")
    return " ".join(argv[:2]) if argv[0] in two and len(argv) > 1 else argv[0]


# Looking commands that work on an ended run, or need nothing wrong to show they answer.
FINE = {
    "validate",
    "list",
    "roles",
    "skills sources",
    "skills status",
    "skills list",
    "up",
    "down",
    "demo",
    "server",
}


def test_every_command_has_rows_in_the_table():
    missing = sorted(commands() - {covered(c.argv) for c in cases()} - FINE)
    assert missing == [], f"commands without a row in the no-traceback table: {missing}"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_main(argv: list[str]) -> tuple[int, str, str, str | None]:
    """starter.py in this process (a thread of its own: commands run their own event loop)."""
    out, err = io.StringIO(), io.StringIO()
    consoles = (render.out, render.err)
    files = [c.file for c in consoles]
    render.out.file, render.err.file = (
        out,
        err,
    )  # rich's consoles, as the commands print through them
    crash = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse's own usage errors
                code = int(e.code or 0)
    except BaseException:  # noqa: BLE001 - the point of the test: any escape is a traceback for a person
        crash = traceback.format_exc()
        code = -1
    finally:
        render.out.file, render.err.file = files
    return code, out.getvalue(), err.getvalue(), crash


@pytest.fixture
async def ended(env: Env) -> str:
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(plan(noop("1"), name="ended"), id=f"xsky-ended-{uuid.uuid4().hex[:6]}")
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"
    return run.id


async def test_no_command_prints_a_traceback_in_any_situation(
    env: Env, ended: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XSKY_WORKER_WAIT", "1")
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(env.home / "skills-home"))
    address = {"unreachable": f"127.0.0.1:{_closed_port()}", "remote": "temporal.invalid:7233"}
    failures: list[str] = []
    for case in cases():
        if case.situation in address:
            monkeypatch.setenv("TEMPORAL_ADDRESS", address[case.situation])
        else:
            monkeypatch.setenv("TEMPORAL_ADDRESS", env.address)
        # no worker polls this queue: a queue of its own for the no-worker rows
        monkeypatch.setenv(
            "XSKY_TASK_QUEUE",
            f"none{uuid.uuid4().hex[:6]}"
            if case.situation == "no-worker"
            else env.settings.task_queue,
        )
        argv = [a.replace(ENDED, ended) for a in case.argv]
        code, out, err, crash = await asyncio.to_thread(run_main, argv)
        said = " ".join((out + err).split())
        problems = []
        if crash is not None or "Traceback" in out + err:
            problems.append(f"traceback:\n{crash or err}")
        if code != case.code:
            problems.append(f"exit {code}, not {case.code}")
        if case.says not in said:
            problems.append(f"does not say {case.says!r}")
        if problems:
            failures.append(
                f"[{case.situation}] starter.py {' '.join(argv)}: {'; '.join(problems)}\n  printed: {said[:400]}"
            )
    assert not failures, f"{len(failures)} of {len(cases())} cases:\n" + "\n".join(failures)
