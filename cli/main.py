"""``starter.py``: argument parsing and dispatch. Each command lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from cli.args import Parser, late_positionals, reject_unknown
from cli.hints import cli_message
from xsky.errors import PlanError, XSkyError
from xsky.safe_text import printable

Handler = Callable[[argparse.Namespace], int]


# Each command's module, in the order `--help` lists them. Only the module of the command
# given is imported: the others bring Temporal's client, the MCP SDK, the leader — a second
# of start-up that `validate` or `status` do not need. tests/unit/test_cli_start.py checks
# this table against what the modules register.
COMMANDS: dict[str, str] = {
    "validate": "validate_cmd",
    "convert": "convert_cmd",
    "run": "runs_cmd",
    "status": "status_cmd",
    "result": "status_cmd",
    "list": "list_cmd",
    "files": "files_cmd",
    "follow": "follow_cmd",
    "events": "events_cmd",
    "ui": "ui_cmd",
    **dict.fromkeys(
        (
            "pause",
            "resume",
            "reset",
            "timeout",
            "cancel",
            "retry",
            "skip",
            "nudge",
            "answer",
            "approve",
            "replan",
            "approve-plan",
            "end",
            "requests",
        ),
        "steer_cmd",
    ),
    "fork": "fork_cmd",
    "diff": "fork_cmd",
    "budget": "budget_cmd",
    "log": "log_cmd",
    "ledger": "ledger_cmd",
    "gc": "gc_cmd",
    "plan": "plan_cmd",
    "roles": "roles_cmd",
    "permissions": "permissions_cmd",
    "mcp": "mcp_cmd",
    "skills": "skills_cmd",
    "server": "server_cmd",
    "up": "server_cmd",
    "down": "server_cmd",
    "demo": "demo_cmd",
}


# What the top level's `--help` says of each command. It is asked for first, and a command
# misspelt is answered from it too: neither imports a command's module (~0.3 s of start-up
# on a quick machine). tests/unit/test_cli_start.py checks it against what the modules register.
SUMMARIES: dict[str, str] = {
    "validate": "check a workflow XML and show it as a tree",
    "convert": "write an Eko plan (<root>) as a native <workflow>, or back with --to eko",
    "run": "validate a workflow XML and start it as a durable run",
    "status": "the task board of a run",
    "result": "the results of a finished run",
    "list": "recent runs, with what each is doing (xsky's search attributes)",
    "files": "a run's workspace files: the list, or with PATH one file printed (or a folder listed)",
    "follow": "the live task board of a run until it ends, then its results (Ctrl-C leaves it running)",
    "events": "a run's events as JSON lines: agents started, stepped, done; requests; budget; decisions",
    "ui": "a live page of runs: the plan as a graph, events as they happen, transcripts, steering",
    "pause": "stop dispatching new agents (with a task: pause that agent alone)",
    "resume": "dispatch again after a pause (with a task: that agent)",
    "reset": "start one agent's attempt again, from its checkpoint",
    "timeout": "seconds one agent's next attempt may take",
    "cancel": "cancel one task, or the whole run when no task is given",
    "retry": "run a failed, cancelled or escalated task again (on an ended run: a follow-up run that carries every completed result over)",
    "skip": "mark a task done without running it",
    "nudge": "send a message to one agent, delivered at its next step",
    "answer": "answer a pending question (Q-n) or escalation (E-n)",
    "approve": "decide a pending tool approval (A-n)",
    "replan": "change the plan: a prompt for the planner, or --xml FILE to replace it",
    "approve-plan": "approve the plan under review so agents start",
    "end": "end a run held open after a failure (--hold-on-failure) or paused",
    "requests": "questions, approvals and escalations waiting for a person",
    "fork": "a new run from any agent of a run (ended or running): what it does not lead to is carried over, it and what follows run again, with an edit",
    "diff": "what differs between two runs, agent by agent",
    "budget": "a run's spend per task and in all; with LIMITS, raise or lower its budget",
    "log": "an agent's transcript: messages, tool calls and results, permission decisions, tokens",
    "ledger": "the leader's ledgers: the goal and its check, facts, and every judgment it made",
    "gc": "remove the stored objects of runs that ended (never a running run's)",
    "plan": "plan a request (print it: planned here, with this command's model; or --run it: planned on the workers), or show a run's plan by its id",
    "roles": "list the roles agents can take (or `roles show NAME`)",
    "permissions": "check a tool call against the rules and a role, or show a run's audit log",
    "mcp": "the MCP servers workers use: list them, or check one",
    "skills": "learn skills from coding-agent transcripts (sources, watch, scan, status, atoms)",
    "server": "start (or --stop) the local Temporal dev server",
    "up": "start the server and a worker in the background, if they are not up",
    "down": "stop the worker and the server that `up` started",
    "demo": "run the demo plan against a locally served page (starts what it needs)",
}


def build_parser(command: str | None = None, *, summaries: bool = False) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone when it is one (quicker); with
    ``summaries``, each command named with its line of help and nothing more (the top level's
    ``--help``, and what a command that does not exist is answered with)."""
    parser = Parser(
        prog="starter.py",
        description="xsky: durable AI-agent workflows on Temporal.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    if summaries:
        for name, line in SUMMARIES.items():
            sub.add_parser(name, help=line, add_help=False)
        return parser
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(f"cli.{module}").register(sub)
    # A command's own --help opens with what it does, as the top level's list says it (walk12:
    # `starter.py budget --help` showed its arguments only — the line that says what budget
    # does was in `starter.py --help` alone).
    for name, command_parser in sub.choices.items():
        if command_parser.description is None and name in SUMMARIES:
            command_parser.description = SUMMARIES[name]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    args: argparse.Namespace | None = None
    # Ctrl-C can come at any moment, also while the parser is built and the command's module
    # imported (half a second): the whole of it is inside the `try` that answers it.
    try:
        args = _parse(given)
        return _handle(args)
    except KeyboardInterrupt:
        sys.stderr.write(_interrupted(args) + "\n")
        return 130


def _parse(given: list[str]) -> argparse.Namespace:
    # The command is the first word that is not an option: the top level has only --help.
    command = next((a for a in given if not a.startswith("-")), None)
    # `--help` before any command is the top level's (`starter.py -h status`): every command.
    # (argparse takes `--he` or `--hel` for it too.)
    before = given[: given.index(command) if command else None]
    top_help = any(a == "-h" or (len(a) > 2 and "--help".startswith(a)) for a in before)
    parser = build_parser(command, summaries=top_help or command not in COMMANDS)
    args, extras = parser.parse_known_args(given)
    if extras:
        extras = late_positionals(parser, args, extras)
    if extras:
        reject_unknown(parser, args, extras)
    return args


def _interrupted(args: argparse.Namespace | None) -> str:
    """What Ctrl-C stopped, in one line: a run it started or followed goes on."""
    if args is None:  # still reading the command line: nothing was done
        return "interrupted"
    if _starts(args):
        # Only the run it started goes on: `run --id X` stopped while it waited for a worker
        # started nothing, and a fork's `id` is the run forked, not the fork.
        started = getattr(args, "started", None)
        starting = getattr(args, "starting", None)
        if started is None and starting is not None:
            # stopped as it was started, or while it waited for a worker to take it: it may
            # well go on — named, so it can be found (walk10: only "unless `list` shows it")
            wid = printable(str(starting))
            return (
                f"interrupted as {wid} was started: if it was, it goes on — "
                f"`starter.py follow {wid}` re-attaches, `starter.py cancel {wid}` stops it"
            )
        if started is None:
            return (
                "interrupted before the run was started (or as it started): nothing goes on "
                "unless `starter.py list` shows it"
            )
        return f"interrupted; the run goes on: re-attach with `starter.py follow {printable(str(started))}`"
    run = getattr(args, "started", None) or getattr(args, "id", None)
    if run and _sends(args):
        # The update may have reached the run before Ctrl-C: it applies or not, out of sight.
        return f"interrupted; what was sent may still apply: {_check_with(args, run)}"
    if run and args.command in ("events", "log"):
        # Re-attach to the view that was stopped: `follow` shows the board, not these lines.
        again = " ".join(
            printable(str(w))
            for w in (
                args.command,
                run,
                getattr(args, "task", None),
                "--follow" * args.follow,
                "--json" * getattr(args, "json", False),
            )
            if w
        )
        return f"interrupted; the run goes on: see it again with `starter.py {again}`"
    return "interrupted" + (
        f"; the run goes on: re-attach with `starter.py follow {printable(str(run))}`"
        if run
        else "; a run that was started goes on: `starter.py list` shows it"
    )


def _starts(args: argparse.Namespace) -> bool:
    """Whether the command starts a run it names (`run`, `fork`, `plan --run`)."""
    command = getattr(args, "command", None)
    return command in ("run", "fork") or (command == "plan" and bool(getattr(args, "run", False)))


# Steering commands that send a run a change (an update), rather than only ask it.
_SENDING = {c for c, module in COMMANDS.items() if module == "steer_cmd"} - {"requests"}


def _sends(args: argparse.Namespace) -> bool:
    """Whether the command sends its run a change: a steering command, or `budget` with new
    limits."""
    if args.command == "budget":
        return args.limits is not None or args.reserve is not None
    return args.command in _SENDING


def _check_with(args: argparse.Namespace, run: object) -> str:
    """The command that shows whether a change sent to ``run`` applied."""
    shows = "budget" if args.command == "budget" else "status"
    return f"`starter.py {shows} {printable(str(run))}` shows whether it did"


def _cancelled_call(e: Exception) -> bool:
    """Whether ``e`` is Temporal's client saying its call was cancelled: what a Ctrl-C during
    an update turns into (asyncio.run cancels the command, and the client raises its own error
    from the CancelledError rather than letting it through, so no KeyboardInterrupt comes)."""
    if "temporalio.client" not in sys.modules:
        return False
    import asyncio

    from temporalio.client import RPCTimeoutOrCancelledError

    return isinstance(e, RPCTimeoutOrCancelledError) and isinstance(
        e.__cause__, asyncio.CancelledError
    )


def _handle(args: argparse.Namespace) -> int:
    """Run the command, and say a mistake or a refusal in a sentence rather than a traceback."""
    # (rich, through cli.render, is imported here rather than with this module: it is a good
    # part of start-up, and a Ctrl-C during an import above `main` could not be answered)
    from cli.render import err, shown
    from xsky.config import misspelt_settings

    handler: Handler = args.handler
    for warning in misspelt_settings():
        err.print(f"[yellow]warning:[/] {shown(warning)}", markup=True, highlight=False)
    try:
        return handler(args)
    # Errors quote what the run said (refusals, task texts, agents' errors): shown(), not markup.
    except PlanError as e:  # (an XSkyError too: its problems, each at its line)
        err.print(f"[red]error:[/] {shown(e)}")
        return 2
    except XSkyError as e:
        err.print(f"[red]error:[/] {shown(cli_message(e))}", markup=True, highlight=False)
        return 2
    except BrokenPipeError:
        # The reader went away (`… | head`): nothing more to say, and nothing wrong.
        # Python's own advice for a closed pipe
        sys.stdout = open(os.devnull, "w")
        return 0
    except OSError as e:
        home = _home_not_a_folder(e)
        if home is not None:
            err.print(f"[red]error:[/] {shown(home)}", markup=True, highlight=False)
            return 2
        # A file or folder the command was pointed at (or needs) is not usable: say which.
        where = f"{e.filename}: " if e.filename else ""
        err.print(
            f"[red]error:[/] {shown(where)}{shown(e.strerror or str(e))}; check the path and its permissions",
            markup=True,
            highlight=False,
        )
        return 2
    except Exception as e:
        if _cancelled_call(e):
            raise KeyboardInterrupt from e  # said by main(), as any Ctrl-C
        said = _temporal_error(e, args)
        if said is None:
            raise
        err.print(f"[red]error:[/] {said}", markup=True, highlight=False)
        return 2


def _home_not_a_folder(e: OSError) -> str | None:
    """The sentence for xsky's home (XSKY_HOME) being a file, when that is why ``e`` came:
    creating it says "File exists", creating something in it "Not a directory" — neither
    says that the home is what to change."""
    if not isinstance(e, FileExistsError | NotADirectoryError) or not e.filename:
        return None
    given = os.environ.get("XSKY_HOME")
    home = os.path.abspath(given or ".xsky")
    failed = os.path.abspath(os.fsdecode(e.filename))
    if os.path.isdir(home) or not os.path.lexists(home):
        return None
    if failed != home and not failed.startswith(home + os.sep):
        return None
    named = f"XSKY_HOME ({given})" if given else "xsky's home, .xsky here (XSKY_HOME is not set),"
    return (
        f"{named} is a file, not a folder: xsky keeps its state there (the server's database, "
        "logs, runs); set XSKY_HOME to a folder, or move the file away"
    )


def _temporal_error(e: Exception, args: argparse.Namespace) -> str | None:
    """One sentence for what Temporal refused, or None for anything else. Temporal's client
    is imported only by commands that talk to it: when it is not loaded, ``e`` is not its."""
    if "temporalio.client" not in sys.modules:
        return None
    from temporalio.client import RPCTimeoutOrCancelledError, WorkflowQueryFailedError
    from temporalio.service import RPCError

    from cli.render import shown

    if isinstance(e, RPCTimeoutOrCancelledError):
        # The server did not answer a change in time: it may still apply, or not.
        run = getattr(args, "id", None)
        check = (
            _check_with(args, shown(run))
            if run
            else "check the server with `starter.py list`, and the worker with `starter.py up`"
        )
        return f"the server did not answer in time; what was sent may still apply: {check}"
    if isinstance(e, WorkflowQueryFailedError):
        # The run's own code failed to answer (its message may quote the run's data).
        return f"the run could not answer: {shown(e)}; the worker's log has the details"
    if isinstance(e, RPCError):
        # Anything the server refused that a command did not expect: one sentence, not a traceback.
        return (
            f"Temporal refused the request: {shown(e.message)} "
            f"({e.status.name if e.status else 'unknown'}); "
            "check the server with `starter.py list`, and the worker with `starter.py up`"
        )
    return None


if __name__ == "__main__":
    sys.exit(main())
