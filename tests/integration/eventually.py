"""Waiting on facts, not on time: ``await eventually(assertion)``.

A test that must see something happen states it as an assertion and lets ``eventually``
run it again until it holds, or until the deadline, when the last ``AssertionError`` is
raised: the failure says what was seen, not only that time ran out. (As sdk-python's
``tests/helpers.assert_eventually``.)

A test that must see something *not* happen does not wait "long enough": it waits on a
later fact that proves it (the run settled, a later event in the history), or checks the
rule exactly in the pure core (tests/unit/test_leader_core.py).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    assertion: Callable[[], T | Awaitable[T]], timeout: float = 30.0, interval: float = 0.1
) -> T:
    """Run ``assertion`` (sync or async, no arguments) until it raises no AssertionError;
    return what it returned. At the deadline, its last AssertionError is raised."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = assertion()
            if inspect.isawaitable(result):
                result = await result
            return result  # type: ignore[return-value]
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
        await asyncio.sleep(interval)
