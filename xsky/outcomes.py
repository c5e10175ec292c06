"""What counts as success for an agent, and whether trying again may help: pure rules that
the tools and the agent activity (activities/) apply, so every kind of agent says the same.

Transient — a lost connection, a timeout of a network call, HTTP 429 or 5xx, a model's rate
limit — may pass: the attempt is retried with backoff. Deterministic — a non-zero exit, any
other 4xx, a refused navigation, bad arguments, permission denied, a missing model — fails
on its first attempt (``non_retryable``), and the reason says why it was not retried.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

# How a failed attempt is classified in its error's details (``{"failure": …}``), for the leader.
DETERMINISTIC = "deterministic"  # failed on its first attempt: retrying would not help
TRANSIENT = "transient"  # may pass: retried while the error budget lasts
EXHAUSTED = "exhausted"  # transient, but every attempt the budget allows ended in an error

# The label of the offline extractive answers (no model), on the board and in results.
OFFLINE_LABEL = "offline: extractive, no model"
OFFLINE_PROVIDER = "offline"  # AgentOutcome.provider of those answers (xsky/plan/offline.py)
# How the result of a model that stopped calling tools without saying anything begins: the
# work may be done, but the task's answer is missing (the leader sends it back once).
NO_FINAL_ANSWER = "(the model ended without a final answer"


def provider_label(provider: str | None) -> str | None:
    """What a reader must know of who answered a completed task: offline, with no model."""
    return OFFLINE_LABEL if provider == OFFLINE_PROVIDER else None


@dataclass(frozen=True)
class Verdict:
    """Why a tool call did not succeed, and whether trying it again may help."""

    message: str
    retryable: bool


def http_status_retryable(status: int) -> bool:
    """429 (too many requests) and server errors may pass; any other 4xx will not."""
    return status == 429 or status >= 500


def navigation_verdict(
    url: str,
    *,
    status: int | None,
    egress: str | None = None,
    body: str = "",
    final_url: str = "",
    empty: bool = False,
) -> Verdict | None:
    """A page that loaded, judged: None when it is a page worth reading.

    ``egress`` is the egress proxy's ``X-Xsky-Egress`` header (``refused``: a rule or the
    address policy refused it; ``unreachable``: the proxy could not connect), ``body`` the
    proxy's own explanation, ``final_url`` where the browser ended (``chrome-error://…`` is
    Chromium's error page), ``empty`` an empty document (no title, no text, no element).
    """
    where = f"browser_navigate {url}"
    said = " ".join(body.split())[:500]
    if egress == "refused":
        return Verdict(f"{where} was {said or 'refused by the egress proxy'}", False)
    if egress == "unreachable":
        return Verdict(f"{where} could not connect: {said or 'the host did not answer'}", True)
    if final_url.startswith("chrome-error://"):
        return Verdict(
            f"{where} could not be opened: the browser showed its network error page", True
        )
    if status is not None and status >= 400:
        return Verdict(f"{where} answered HTTP {status}", http_status_retryable(status))
    if empty:
        return Verdict(f"{where} answered an empty document (no title, text or element)", False)
    return None


def navigation_error_verdict(url: str, error: str, denied: str | None = None) -> Verdict:
    """A navigation the browser could not complete (Playwright raised ``error``, whose first
    line is e.g. ``net::ERR_CONNECTION_REFUSED at …``); ``denied`` is the egress proxy's
    recorded refusal of this call, if it made one (an https tunnel's refusal is not shown
    to the page)."""
    where = f"browser_navigate {url}"
    first = error.splitlines()[0] if error else "the browser gave no reason"
    if denied:
        return Verdict(f"{where} was refused by xsky's egress proxy: {denied}", False)
    if "ERR_BLOCKED_BY_CLIENT" in first:
        return Verdict(
            f"{where} is not allowed: the host is denied (a deny rule, or a link-local address)",
            False,
        )
    if "ERR_NAME_NOT_RESOLVED" in first:
        return Verdict(
            f"{where} could not be opened: the host name cannot be resolved ({first})", False
        )
    if any(mark in first for mark in ("ERR_CERT_", "ERR_SSL_", "ERR_UNSAFE_", "ERR_INVALID_URL")):
        return Verdict(f"{where} could not be opened: {first}", False)
    # refused or reset connections, closed ports, timeouts, empty answers: they may pass
    return Verdict(f"{where} could not be opened: {first}", True)


# Errors of the file system that may pass by themselves; any other (permission denied, no
# such file, read-only, no space …) stays until someone changes something.
_TRANSIENT_ERRNOS = frozenset(
    {errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT, errno.EIO, errno.ESTALE}
)


def os_error_verdict(action: str, e: OSError) -> Verdict:
    """A file tool's OSError, said for a person: ``action`` is e.g. ``file_write notes.txt``."""
    why = e.strerror or str(e)
    if e.errno in (errno.EACCES, errno.EPERM):
        why = f"permission denied ({why})"
    return Verdict(f"{action}: {why}", e.errno in _TRANSIENT_ERRNOS)


def exit_verdict(command: str, code: int | None, output_tail: str) -> Verdict:
    """A command that exited non-zero: deterministic (running it again would do the same).
    The message's last line is the exit status, so the leader's "— not retried" follows it."""
    head = f"the command exited with status {code}: {command[:200]}"
    if not output_tail.strip():
        return Verdict(head, False)
    return Verdict(f"{head}\n{output_tail.strip()}\n(exit status {code})", False)


def failure_kind(non_retryable: bool, exhausted: bool = False) -> str:
    """How an attempt's error is classified for the leader (see the module's docstring)."""
    if exhausted:
        return EXHAUSTED
    return DETERMINISTIC if non_retryable else TRANSIENT


def model_answer(content: str | None, tool_results: list[str]) -> tuple[str | None, str | None]:
    """(the answer, or None; why there is none) for a model's last reply ``content``.

    A reply with text is the answer. An empty reply after tool calls completes with a true
    note and the last tool result (the work was done, but the model said nothing of it); an
    empty reply with no tool call at all is no answer."""
    if content is not None and content.strip():
        return content, None
    if tool_results:
        last = tool_results[-1].strip()
        return (
            f"{NO_FINAL_ANSWER} after {len(tool_results)} tool call(s); "
            f"the last tool result follows)\n{last}",
            None,
        )
    return None, "the model gave no answer: its reply was empty and it called no tool"
