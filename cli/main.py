"""``starter.py``: argument parsing and dispatch. Each command lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from cli.args import Parser, reject_unknown
from cli.hints import cli_message
from cli.render import err, shown
from xsky.errors import PlanError, XSkyError

Handler = Callable[[argparse.Namespace], int]


# Each command's module, in the order `--help` lists them. Only the module of the command
# given is imported: the others bring Temporal's client, the MCP SDK, the leader — a second
# of start-up that `validate` or `status` do not need. tests/unit/test_cli_start.py checks
# this table against what the modules register.
COMMANDS: dict[str, str] = {
    "validate": "validate_cmd",
    "convert": "convert_cmd",
    "run": "runs_cmd",
    "status": "runs_cmd",
    "result": "runs_cmd",
    "list": "runs_cmd",
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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone when it is one (quicker)."""
    parser = Parser(
        prog="starter.py",
        description="xsky: durable AI-agent workflows on Temporal.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(f"cli.{module}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word that is not an option: the top level has only --help.
    parser = build_parser(next((a for a in given if not a.startswith("-")), None))
    args, extras = parser.parse_known_args(given)
    if extras:
        reject_unknown(parser, args, extras)
    handler: Handler = args.handler
    try:
        return handler(args)
    # Errors quote what the run said (refusals, task texts, agents' errors): shown(), not markup.
    except XSkyError as e:
        err.print(f"[red]error:[/] {shown(cli_message(e))}", markup=True, highlight=False)
        return 2
    except PlanError as e:
        err.print(f"[red]error:[/] {shown(e)}")
        return 2
    except BrokenPipeError:
        # The reader went away (`… | head`): nothing more to say, and nothing wrong.
        # Python's own advice for a closed pipe
        sys.stdout = open(os.devnull, "w")
        return 0
    except OSError as e:
        # A file or folder the command was pointed at (or needs) is not usable: say which.
        where = f"{e.filename}: " if e.filename else ""
        err.print(
            f"[red]error:[/] {shown(where)}{shown(e.strerror or str(e))}; check the path and its permissions",
            markup=True,
            highlight=False,
        )
        return 2
    except Exception as e:
        said = _temporal_error(e)
        if said is None:
            raise
        err.print(f"[red]error:[/] {said}", markup=True, highlight=False)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C stops this command only: a run it started or followed goes on.
        run = getattr(args, "started", None) or getattr(args, "id", None)
        err.print(
            "interrupted"
            + (
                f"; the run goes on: re-attach with `starter.py follow {shown(run)}`"
                if run
                else "; a run that was started goes on: `starter.py list` shows it"
            )
        )
        return 130


def _temporal_error(e: Exception) -> str | None:
    """One sentence for what Temporal refused, or None for anything else. Temporal's client
    is imported only by commands that talk to it: when it is not loaded, ``e`` is not its."""
    if "temporalio.client" not in sys.modules:
        return None
    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError

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
