"""Secrets of the worker (API keys, tokens): kept out of its process environment, and their
values kept out of everything it writes.

Agents run commands as the worker's user; a command can read ``/proc/<worker>/environ``.
So ``worker.py`` moves every secret-looking variable out of its environment before it
serves anything: it re-executes itself without them and receives them over a pipe
(:func:`hide_from_environment`). Activities read them with :func:`get`, and an MCP server's
``${VAR}`` references with :func:`handed_out`.

Every value handed out so — the worker's own secrets, and whatever a ``${VAR}`` reference of
any MCP server resolved to — is known to this process's :class:`~xsky.security.scrub.Scrubber`:
:func:`scrub` and :func:`scrub_value` replace it (and its common encodings) with
``[secret ${NAME}]`` in what leaves an MCP server, an agent's outcome or error, and the
worker's log (:func:`install_log_filter`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import Any

from xsky.security.scrub import Scrubber

# OTLP headers carry collectors' tokens (``authorization=Bearer …``): secrets too.
SECRET_NAME = re.compile(
    r"(API_KEY|_KEY$|TOKEN|SECRET|PASSWORD|CREDENTIAL|^OTEL_EXPORTER_OTLP_(TRACES_)?HEADERS$)", re.I
)
_store: dict[str, str] = {}
_scrubber = Scrubber()


def get(name: str) -> str | None:
    """A secret the worker was started with (or, outside worker.py, from the environment); one
    whose name says secret is scrubbed from then on."""
    value = _store.get(name) or os.environ.get(name) or None
    if value is not None and SECRET_NAME.search(name):
        _scrubber.add(name, value)
    return value


def handed_out(name: str) -> str | None:
    """The value of ``name`` for an MCP server's ``${VAR}`` reference: whatever its name, it is
    scrubbed from then on (a server given it may print or echo it)."""
    value = _store.get(name) or os.environ.get(name) or None
    if value is not None:
        _scrubber.add(name, value)
    return value


def scrub(text: str) -> str:
    """``text`` with every secret's value this process handed out replaced by ``[secret ${NAME}]``."""
    return _scrubber.scrub(text)


def scrub_value(value: Any) -> Any:
    """Every string inside ``value`` (dicts, lists, tuples, pydantic models) scrubbed."""
    return _scrubber.scrub_value(value)


class ScrubFilter(logging.Filter):
    """Scrubs each log record it sees: its message (with its arguments) and, when that holds a
    secret, its traceback — folded into the message, since a formatter may format the
    exception itself (the JSON one does)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _scrubber:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is the logging module's to report
            return True
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info:
            trace = record.exc_text or logging.Formatter().formatException(record.exc_info)
            scrubbed = scrub(trace)
            if scrubbed != trace:
                record.msg, record.args = f"{record.msg}\n{scrubbed}", None
                record.exc_info, record.exc_text = None, None
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


def install_log_filter() -> None:
    """Scrub every log line of this process: on the root and ``xsky`` loggers, and on the root
    logger's handlers — a logger's filter sees only what is logged to it, a handler's every
    record that reaches it (the SDK's and libraries' loggers included)."""
    scrubbing = ScrubFilter()
    targets: list[logging.Filterer] = [logging.getLogger(), logging.getLogger("xsky")]
    targets += logging.getLogger().handlers
    for target in targets:
        if not any(isinstance(f, ScrubFilter) for f in target.filters):
            target.addFilter(scrubbing)


def hide_from_environment(argv: list[str]) -> None:
    """Re-execute this program without secret variables; they come back through a pipe.

    Returns only in the re-executed process (or when there is nothing to hide).
    """
    fd = os.environ.pop("XSKY_SECRETS_FD", None)
    if fd is not None:
        with os.fdopen(int(fd), "r") as pipe:
            _store.update(json.load(pipe))
        for name, value in _store.items():
            _scrubber.add(name, value)
        return
    secrets = {k: v for k, v in os.environ.items() if SECRET_NAME.search(k)}
    if not secrets:
        return
    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe:
        json.dump(secrets, pipe)  # small: fits the pipe's buffer before anyone reads
    os.set_inheritable(read, True)
    env = {k: v for k, v in os.environ.items() if k not in secrets}
    env["XSKY_SECRETS_FD"] = str(read)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv], env)
