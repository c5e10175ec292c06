"""The CLI's own words for the fix of an XSkyError.

The Python API words its fixes for its callers (``Run.result()``, ``python worker.py``); a
person at the command line is told the command instead. The error's ``topic`` says which
fix it is and ``subject`` what it is about (xsky/errors.py)."""

from __future__ import annotations

import re

from xsky.errors import XSkyError

HINTS = {
    "connect": "start a local server and a worker with `python starter.py up` (or `make demo`), "
    "or set TEMPORAL_ADDRESS",
    "connect-timeout": "a server there may be frozen, overloaded or still starting (its log: "
    "`starter.py up` prints where), or a firewall drops the connection; try again in a moment",
    "worker": "start one with `starter.py up` (a server and a worker) or `python worker.py`",
    "worker-kinds": "start one with `python worker.py --kinds {subject} --no-leader` "
    "(or `starter.py up`); nothing was started",
    "worker-stopped": "run it again in a moment (`starter.py status {subject}`); restart or resume "
    "that worker if it stays silent",
    "workers-busy": "run it again in a moment, or start more workers (`python worker.py`)",
    "unserved": "start one with `starter.py up` or `python worker.py`; {subject} is started and "
    "begins once a worker polls (watch it with `starter.py follow {subject}`)",
    "skills-unserved": "start one with `python starter.py up` (or `python worker.py`) on the "
    "machine with the transcripts; the scan {subject} is started and runs once a worker polls",
    "not-found": "`starter.py list` shows the recent ones",
    "ended": "`starter.py result {subject}` shows how it ended",
    "running": "wait for it with `starter.py result {subject} --wait`, or watch it with "
    "`starter.py status {subject}`",
    "exists": "see it with `starter.py status {subject}`, or start this one with another `--id`",
    "search-attributes": "start the server with `starter.py server` (or `up`), which registers them",
    "skills-worker": "start one with `python starter.py up` (or `python worker.py`) on the machine "
    "with the transcripts",
    "skills-worker-store": "with an object store (XSKY_STORE) only a worker started with "
    "--skills serves it: start `python worker.py --skills` on the one host that keeps the "
    "skills home, where the transcripts are (`starter.py up` does not)",
    "skills-unserved-store": "with an object store (XSKY_STORE) only a worker started with "
    "--skills serves it: start `python worker.py --skills` on the one host that keeps the "
    "skills home; the scan {subject} is started and runs once such a worker polls",
    "skills-empty": "run `starter.py skills scan --once`",
    "skills-traj": "`starter.py skills status` lists them",
    "skills-scan-running": "see `starter.py skills status` or {subject}",
}


def cli_message(error: XSkyError) -> str:
    """The error as the CLI says it: its fact, with the CLI's fix where it has one."""
    topic = error.topic or ""
    if topic.startswith("unknown-"):
        # check_names speaks of a plan's variables and context; the CLI's are flags.
        flag = {"unknown-variable": "--var", "unknown-context": "--context"}[topic]
        return f"{flag} {str(error).removeprefix(topic.removeprefix('unknown-') + ' ')}"
    if topic == "refused":
        # The run's refusals name its queries and updates; at the command line they are commands.
        text = str(error).replace("(the plan query)", f"(`starter.py plan {error.subject}`)")
        return re.sub(
            r"with the approve_tool update \(request (\S+)\)",
            lambda m: f"with `starter.py approve {error.subject} {m[1]}`",
            text,
        )
    hint = HINTS.get(topic)
    if hint is None:
        return str(error)
    if topic == "search-attributes" and error.fix:
        return f"{error.fact}; {hint}, or register them yourself: {error.fix.removeprefix('register them: ')}"
    if topic == "worker" and error.fix and "nothing was started" in error.fix:
        hint += "; nothing was started"
    return f"{error.fact}; {hint.format(subject=error.subject)}"
