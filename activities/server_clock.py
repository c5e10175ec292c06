"""The server's clock as an activity attempt knows it: the time the server gave the attempt out
(``started_time``) carried on by this worker's monotonic clock from when it first met the
attempt (activities/hosts.py, activities/agents/spend.py)."""

from __future__ import annotations

import time
from collections import OrderedDict

from temporalio import activity

# When this worker first met each attempt (monotonic), the attempts asked last at the end.
_MET: OrderedDict[tuple[object, ...], float] = OrderedDict()
# Attempts remembered: the least recently asked go first — an attempt asks whenever it needs
# the time (each model call, each host judged), so one still running is not among them.
KEPT = 4096


def anchor() -> tuple[float, float] | None:
    """This attempt's view of the server's clock: (the time the server gave it out, this
    worker's monotonic time when it first met it), registered on the first ask; None outside an
    activity or without a start time. The server's time now is the first plus what the monotonic
    clock counted since the second (:func:`server_time`; a lease, renewed on a thread of its
    own where no activity is current, is handed it: activities/agents/lease.py).

    An attempt is told apart by its workflow's run and its own start as well as its ids: the
    leader's host activities take the SDK's activity ids (a sequence that starts again in each
    execution), so after a continue-as-new or a reset an attempt "3" of the same workflow met
    the anchor of the previous execution's "3" — its clock ahead by the hours between them, and
    a host that beat a second ago judged lost. Entries are dropped least recently asked first,
    never all at once (a clear re-anchored running attempts at their start: their clocks fell
    behind by all they had run, a budget's minutes given again)."""
    try:
        info = activity.info()
    except RuntimeError:
        return None
    started = getattr(info, "started_time", None)
    if started is None:
        return None
    key = (
        *(getattr(info, k, None) for k in ("workflow_id", "workflow_run_id", "activity_id")),
        getattr(info, "attempt", None),
        started,
    )
    met = _MET.get(key)
    if met is None:
        met = _MET[key] = time.monotonic()
        while len(_MET) > KEPT:
            _MET.popitem(last=False)
    else:
        _MET.move_to_end(key)
    return (started.timestamp(), met)


def server_time() -> float | None:
    """The server's time now (seconds since the epoch) as this attempt knows it (:func:`anchor`);
    None outside an activity or without a start time."""
    known = anchor()
    return None if known is None else known[0] + (time.monotonic() - known[1])
