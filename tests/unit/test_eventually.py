"""The integration tests' wait, ``eventually``: it returns once the assertion holds, and
at its deadline fails with the assertion's own last message."""

from __future__ import annotations

import time

import pytest

from tests.integration.eventually import eventually


async def test_it_retries_a_sync_assertion_until_it_holds_and_returns_its_value():
    calls: list[int] = []

    def check() -> int:
        calls.append(1)
        assert len(calls) >= 3, f"only {len(calls)} calls"
        return len(calls)

    assert await eventually(check, timeout=5, interval=0) == 3


async def test_it_awaits_an_async_assertion():
    seen: list[int] = []

    async def check() -> str:
        seen.append(1)
        assert len(seen) == 2
        return "held"

    assert await eventually(check, timeout=5, interval=0) == "held"


async def test_at_the_deadline_the_last_assertion_error_is_raised():
    calls: list[int] = []

    def never() -> None:
        calls.append(1)
        raise AssertionError(f"seen {len(calls)}")

    started = time.monotonic()
    with pytest.raises(AssertionError) as info:
        await eventually(never, timeout=0.3, interval=0.05)
    assert time.monotonic() - started >= 0.3
    assert str(info.value) == f"seen {len(calls)}" and len(calls) >= 2


async def test_other_errors_are_not_retried():
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise KeyError("not an assertion")

    with pytest.raises(KeyError):
        await eventually(broken, timeout=5)
    assert calls == [1]
