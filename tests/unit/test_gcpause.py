"""gc_paused: the cycle collector off while a large plan or payload is made, on again after —
also when pauses overlap in several threads (a worker decodes payloads in its workflow and
activity threads at once)."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from xsky.gcpause import gc_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_off_inside_and_on_after(collector_on: None) -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: still off after the inner one ends
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_leaves_the_collector_on(collector_on: None) -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("a payload that does not fit")
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off(collector_on: None) -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_in_many_threads_leave_the_collector_on(collector_on: None) -> None:
    """Four threads pausing and resuming as fast as they can, switching threads every
    microsecond: with the flag read and set apart, one thread turned it off for good after
    another had turned it back on (20 of 20 trials)."""
    stop = threading.Event()

    def pausing() -> None:
        while not stop.is_set():
            with gc_paused():
                pass

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(5):
            stop.clear()
            threads = [threading.Thread(target=pausing) for _ in range(4)]
            for t in threads:
                t.start()
            time.sleep(0.1)
            stop.set()
            for t in threads:
                t.join()
            assert gc.isenabled()
    finally:
        sys.setswitchinterval(interval)
