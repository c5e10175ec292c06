"""Reading plan XML as an older version did, while a leader replays a run that read it then.

A change to how plan XML is read (a repair, a refusal, a name read differently) is a change to
workflow code: a run that read a plan before it must read it the same way when its history is
replayed (workflows/leader/io.read_plan_xml asks the change's patch). Each such change keeps a
flag of its own; :func:`switched_on` sets it for the reading in hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


@contextmanager
def switched_on(flag: ContextVar[bool]) -> Iterator[None]:
    """``flag`` set for what runs inside the ``with``, as it was after."""
    token = flag.set(True)
    try:
        yield
    finally:
        flag.reset(token)
