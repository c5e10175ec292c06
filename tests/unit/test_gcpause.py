"""gc_paused: the cycle collector off while a large plan or payload is made, on again after —
also when pauses overlap in several threads (a worker decodes payloads in its workflow and
activity threads at once)."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from xsky.gcpause import gc_paused

ROOT = Path(__file__).resolve().parents[2]


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


def _in_a_new_process(code: str) -> str:
    """``code``'s last printed line, run in a new interpreter (the generations and the frozen
    set are the process's own)."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


_MADE_IN_A_PAUSE = """
import gc
from xsky.gcpause import gc_paused
gc.collect()
{before}
with gc_paused():
    made = [[i] for i in range(100_000)]
young = gc.get_count()[0]
print(young, any(o is made for o in gc.get_objects(generation=2)), gc.get_freeze_count() - frozen)
"""


def test_what_a_pause_made_goes_to_the_oldest_generation_unwalked() -> None:
    """Left young, 100,000 lists would be walked at the next allocation, and again a
    generation up: a tenth of a 10,000-agent plan's parse and check."""
    _, oldest, thawed = _in_a_new_process(_MADE_IN_A_PAUSE.format(before="frozen = 0")).split()
    assert oldest == "True", "the pause's work was left to the young generation"
    assert thawed == "0"


def test_what_a_worker_froze_stays_frozen() -> None:
    """A worker freezes what it loaded to start (worker.py): a pause must not thaw it."""
    before = "[object() for _ in range(10)]; gc.freeze(); frozen = gc.get_freeze_count()"
    _, oldest, thawed = _in_a_new_process(_MADE_IN_A_PAUSE.format(before=before)).split()
    assert thawed == "0", "objects frozen before the pause were thawed by it"
    assert oldest == "False"  # left to the collector's usual course


def test_a_small_pause_leaves_its_few_objects_young() -> None:
    """A small payload's pause: its objects (and any garbage cycle among them) take the
    collector's usual course, not a trip to the oldest generation."""
    code = _MADE_IN_A_PAUSE.format(before="frozen = 0").replace("range(100_000)", "range(100)")
    _, oldest, _ = _in_a_new_process(code).split()
    assert oldest == "False"
