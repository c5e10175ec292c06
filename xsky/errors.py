"""Errors about plans that a person can act on.

Every problem carries where it is (line and column when it came from XML text, the
agent when it is about one) and a message that says what to change. A plan error holds
all the problems found, not only the first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Problem:
    message: str
    line: int | None = None
    column: int | None = None
    agent_index: int | None = None  # position of the agent in the plan, when about one
    agent_id: str | None = None
    step: tuple[int, ...] | None = None  # the agent's step it is about (xsky.plan.steps)

    def located(self, line: int | None, column: int | None) -> Problem:
        return replace(self, line=line, column=column)

    def format(self, source: str = "<plan>") -> str:
        where = source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


class XSkyError(Exception):
    """A mistake or a situation a person can fix, said in one sentence with the fix.

    The message is ``fact`` and, after a semicolon, ``fix`` — worded for the Python API (or
    for anyone: `python worker.py`). ``topic`` names the kind of fix, so the CLI can say
    its own instead (`starter.py list` for a run not found; cli/hints.py), and ``subject``
    is what it is about (a run id, agent kinds). The CLI prints it without a traceback and
    exits 2; the Python API raises it."""

    def __init__(
        self, fact: str, fix: str | None = None, *, topic: str | None = None, subject: str = ""
    ) -> None:
        super().__init__(f"{fact}; {fix}" if fix else fact)
        self.fact = fact
        self.fix = fix
        self.topic = topic
        self.subject = subject


class PlanError(XSkyError):
    """Base for everything wrong with a plan; ``problems`` lists each finding (a mistake a
    person fixes in the plan: an XSkyError, as the Python API's doc promises)."""

    def __init__(self, problems: list[Problem]):
        if not problems:
            raise ValueError("PlanError needs at least one problem")
        self.problems = problems
        super().__init__("; ".join(p.format() for p in problems))

    @property
    def line(self) -> int | None:
        return self.problems[0].line

    @property
    def column(self) -> int | None:
        return self.problems[0].column

    def format(self, source: str = "<plan>") -> str:
        return "\n".join(p.format(source) for p in self.problems)


class WorkflowXMLError(PlanError):
    """The workflow XML cannot be read: syntax, forbidden constructs, missing parts.

    ``partial`` is the plan as far as it did read (a ParsedWorkflow), when enough of it did
    for the checks of the whole plan to run as well; None otherwise."""

    def __init__(self, problems: list[Problem], partial: object | None = None):
        super().__init__(problems)
        self.partial = partial


class WorkflowValidationError(PlanError):
    """The plan reads fine but cannot run: cycles, unknown ids, names or variables."""


class UsageError(XSkyError):
    """A command or call was given something it cannot use (a bad flag, a missing file)."""


class ConnectError(XSkyError):
    """Temporal is not reachable; the message says how to start it."""


class NoWorkerError(XSkyError):
    """No worker polls a task queue the run needs; nothing was started."""


class WorkerStoppedError(NoWorkerError):
    """A worker the server still lists stopped answering (its heartbeats stopped): the server
    gives its work to the others within a heartbeat timeout; asking again soon helps."""


class WorkersBusyError(NoWorkerError):
    """Workers serve the queue and answer, but not in time: they are busy."""


class WorkflowTaskFailingError(XSkyError):
    """Workers serve the run's queue, but its workflow task fails on them at every try (an
    error in workflow code, or code that changed under a running worker): it cannot answer a
    query or an update, nor go on, until the worker is fixed. Asking again does not help."""


class UnservedRunError(NoWorkerError):
    """A run (or scan) was started, but no worker took its first task: the workers the server
    still lists have stopped. It stays started, and begins once a worker polls; ``subject``
    is its workflow id."""


class RunNotFoundError(XSkyError):
    """No run has this id."""


class RunEndedError(XSkyError):
    """The run has ended; it can no longer be steered."""


class RefusedError(XSkyError):
    """The run refused an intervention (its validator said why)."""
