"""``starter.py``: argument parsing and dispatch. Each command lives in its own module."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from cli.args import Parser, reject_unknown
from cli.hints import cli_message
from cli.render import err, shown
from xsky.errors import PlanError, XSkyError

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="starter.py",
        description="xsky: durable AI-agent workflows on Temporal.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    from cli import (
        budget_cmd,
        demo_cmd,
        follow_cmd,
        gc_cmd,
        ledger_cmd,
        log_cmd,
        mcp_cmd,
        permissions_cmd,
        plan_cmd,
        roles_cmd,
        runs_cmd,
        server_cmd,
        skills_cmd,
        steer_cmd,
        validate_cmd,
    )

    validate_cmd.register(sub)
    runs_cmd.register(sub)
    follow_cmd.register(sub)
    steer_cmd.register(sub)
    budget_cmd.register(sub)
    log_cmd.register(sub)
    ledger_cmd.register(sub)
    gc_cmd.register(sub)
    plan_cmd.register(sub)
    roles_cmd.register(sub)
    permissions_cmd.register(sub)
    mcp_cmd.register(sub)
    skills_cmd.register(sub)
    server_cmd.register(sub)
    demo_cmd.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
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
    except WorkflowQueryFailedError as e:
        # The run's own code failed to answer (its message may quote the run's data).
        err.print(
            f"[red]error:[/] the run could not answer: {shown(e)}; the worker's log has the details",
            markup=True,
            highlight=False,
        )
        return 2
    except RPCError as e:
        # Anything the server refused that a command did not expect: one sentence, not a traceback.
        err.print(
            f"[red]error:[/] Temporal refused the request: {shown(e.message)} ({e.status.name if e.status else 'unknown'}); "
            "check the server with `starter.py list`, and the worker with `starter.py up`",
            markup=True,
            highlight=False,
        )
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


if __name__ == "__main__":
    sys.exit(main())
