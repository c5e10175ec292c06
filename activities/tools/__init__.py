"""Tools agents use, each an async function over a :class:`ToolContext`.

A tool returns a :class:`ToolResult` or raises :class:`ToolError` with a message the
agent (or the person reading the run) can act on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from xsky.artifacts import ArtifactRef

if TYPE_CHECKING:
    from activities.artifacts import ArtifactStore
    from activities.sandbox.bwrap import Confinement
    from activities.sandbox.egress import Policy


class ToolError(Exception):
    """A tool could not do what was asked. ``retryable`` says whether trying again may help."""

    def __init__(
        self, message: str, *, retryable: bool = False, details: dict[str, Any] | None = None
    ):
        super().__init__(message)
        self.retryable = retryable
        self.details = details or {}


class NeedsHuman(Exception):
    """The agent cannot go on without a person: a question, or approval of a tool call.

    The activity ends with a ``question`` / ``needs_approval`` outcome; the leader keeps
    the request as workflow state and dispatches the task again once it is answered.
    """

    def __init__(
        self,
        kind: str,
        *,
        question: str | None = None,
        tool: str | None = None,
        arguments: dict[str, Any] | None = None,
        rule: str | None = None,
        hard: bool = False,
        choices: list[str] | None = None,
    ):
        super().__init__(question or f"approve {tool}")
        self.kind = kind  # "question" | "needs_approval"
        self.question = question
        self.tool = tool
        self.arguments = arguments
        self.rule = rule
        # only a person may approve it (the checker could not vouch for the call, or the role
        # is one the worker does not know): the leader never approves it in their place
        self.hard = hard
        # The only answers the question takes (a call in doubt: again, skip, done); None: any.
        self.choices = choices


@dataclass
class ToolResult:
    text: str
    details: dict[str, Any] = field(default_factory=dict)
    artifacts: list[ArtifactRef] = field(default_factory=list)


class Browsers(Protocol):
    """The worker's browsers as tools use them (:class:`activities.browser.BrowserPool`)."""

    def page_for(
        self, ctx: ToolContext, state: dict[str, Any] | None = None
    ) -> AbstractAsyncContextManager[Any]: ...

    def limit_reached(self) -> str | None: ...


@dataclass
class ToolContext:
    run_id: str
    agent_id: str
    workspace: Path
    store: ArtifactStore
    browsers: Browsers
    heartbeat: Callable[[str], None]  # say "still working" (with a short note)
    file_prefix: str = ""  # e.g. "v1-d2-" so artifacts of different attempts do not clash
    progress: Callable[[str], None] = lambda note: None  # say "moving forward" (throttled report)
    answers: list[Any] = field(default_factory=list)  # people's answers to this task's questions
    artifacts: list[ArtifactRef] = field(default_factory=list)  # stored by tools along the way
    blocked_url: Callable[[str], bool] | None = None  # the run's browser domain deny list
    confinement: Confinement | None = (
        None  # the OS sandbox of processes tools start (None: workspace only)
    )
    unconfined: bool = (
        False  # settings say "security": {"sandbox": "off"}: processes run without the sandbox
    )
    egress: Policy | None = (
        None  # where the browser and http_get may connect (through the egress proxy)
    )
    command_network: Policy | None = None  # where sandboxed commands may connect; None: nowhere
    record: Callable[[str, str, str], None] | None = (
        None  # the egress proxy's decisions, for the permission log
    )
    readable: Callable[[str], bool] | None = (
        None  # may this workspace file be read (file_read deny rules)?
    )
    # (uid, gid) of the sandbox user, who owns what file tools make (None: the worker's own).
    owner: tuple[int, int] | None = None
    # Where a direct command's watchdog writes how it ended (the dispatch's one command): a
    # later attempt of the dispatch returns that end instead of running the command again
    # (with an object store, once the activity has put it there: Attempt.publish_command).
    command_record: Path | None = None
    # Where it writes that end when ``command_record``'s disk cannot take it (a local store's
    # disk full or read-only): the worker's own (AttemptLedger.command_spare).
    command_spare: Path | None = None
    # The agents this one depends on (and itself, when it resumes): a page it opens continues
    # the last page one of them left (its cookies, its origin's storage and its address:
    # activities/tools/browsing.py), as Eko's Browser agents share one page — "log in", then
    # "read the dashboard". A fork or a follow-up run is given the pages of the agents it
    # carries over as it starts (client/start.py).
    page_from: list[str] = field(default_factory=list)
    # The workspace folder's (device, inode) as the attempt found or made it: a command that
    # finds it gone, or another folder in its place, fails the attempt rather than run in (and
    # make again) an empty one; one whose folder went while it ran too (None: not checked).
    workspace_identity: tuple[int, int] | None = None


def folder_identity(folder: Path) -> tuple[int, int] | None:
    """``folder``'s (device, inode), None when it is not there."""
    try:
        st = folder.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


Tool = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]


def cap_text(text: str, limit: int, what: str = "output") -> tuple[str, bool]:
    """At most ``limit`` characters, with a note saying how much was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n[… {what} cut: {len(text) - limit:,} more characters not shown]", True


def require_str(args: dict[str, Any], key: str, tool: str, example: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{tool} needs a {key!r} string argument, e.g. {example}")
    return value


def optional_number(
    args: dict[str, Any], key: str, default: float, low: float, high: float, tool: str
) -> float:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ToolError(f"{tool}: {key} must be a number from {low:g} to {high:g}, not {value!r}")
    return float(value)
