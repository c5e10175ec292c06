"""Secrets of the worker (API keys, tokens) kept out of its process environment.

Agents run commands as the worker's user; a command can read ``/proc/<worker>/environ``.
So ``worker.py`` moves every secret-looking variable out of its environment before it
serves anything: it re-executes itself without them and receives them over a pipe
(:func:`hide_from_environment`). Activities read them with :func:`get`.
"""

from __future__ import annotations

import json
import os
import re
import sys

# OTLP headers carry collectors' tokens (``authorization=Bearer …``): secrets too.
SECRET_NAME = re.compile(
    r"(API_KEY|_KEY$|TOKEN|SECRET|PASSWORD|CREDENTIAL|^OTEL_EXPORTER_OTLP_(TRACES_)?HEADERS$)", re.I
)
_store: dict[str, str] = {}


def get(name: str) -> str | None:
    """A secret the worker was started with (or, outside worker.py, from the environment)."""
    return _store.get(name) or os.environ.get(name) or None


def hide_from_environment(argv: list[str]) -> None:
    """Re-execute this program without secret variables; they come back through a pipe.

    Returns only in the re-executed process (or when there is nothing to hide).
    """
    fd = os.environ.pop("XSKY_SECRETS_FD", None)
    if fd is not None:
        with os.fdopen(int(fd), "r") as pipe:
            _store.update(json.load(pipe))
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
