"""Pausing the cycle collector while a big plan is built or checked.

Building or checking a 10,000-agent plan allocates hundreds of thousands of small
containers; none can be garbage yet, but each allocation burst triggers the collector,
which then walks the whole (growing) heap. Pausing it for the burst cuts the time of a
10,000-agent parse + validate by about a quarter; it is re-enabled right after.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

# Pauses may overlap across threads (a worker decodes large payloads in its workflow and
# activity threads at once): the first to enter turns the collector off, the last to leave
# turns it back on if it was on. Reading and setting the flag without this count let a
# thread that entered while another held the pause turn it off for good after that other
# one left.
_lock = threading.Lock()
_depth = 0
_restore = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _restore
    try:
        with _lock:
            _depth += 1
            if _depth == 1:
                _restore = gc.isenabled()
                gc.disable()
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                _keep_what_was_made()
                gc.enable()


# Young objects past which a pause's work is moved on unwalked: a large plan or payload, not
# the few a small pause leaves (those, and any garbage cycles among them, take the usual course).
_MANY = 50_000
# Set once something is found frozen: it stays so (this module thaws only what it froze).
_frozen_here = False


def _keep_what_was_made() -> None:
    """Move what a large pause left alive straight to the oldest generation.

    Re-enabled as it was, the collector would take everything the pause made for young and,
    at the next allocation, walk all of it (a 10,000-agent plan: ~300,000 objects, ~10 ms,
    a tenth of its parse and check), then walk it again a generation up; it is the plan,
    alive for as long as its caller keeps it. ``freeze`` then ``unfreeze`` moves every tracked
    object to the oldest generation and sets the young count to zero, in constant time. A
    full collection still reads them. Not where something is frozen already (a worker
    freezes what it loaded to start): ``unfreeze`` would thaw that too."""
    global _frozen_here
    if _frozen_here or gc.get_count()[0] <= _MANY:
        return
    if gc.get_freeze_count():  # (it counts the frozen objects: ~1 ms in a worker; asked once)
        _frozen_here = True
        return
    gc.freeze()
    gc.unfreeze()
