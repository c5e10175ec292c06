"""`starter.py files RUN` with an object store: one host holds a run's workspace (the store's
claims), and a person on another machine is told which — not only that it "lives on the host of
a worker elsewhere" (walk9)."""

from __future__ import annotations

from pathlib import Path

from activities.storage import claims
from activities.storage.local import LocalStore
from activities.storage.snapshots import workspace_key
from client.workspace_files import held_by, where_held


def test_the_host_holding_a_workspace_is_named_where_it_is_not_this_one(tmp_path: Path):
    store = LocalStore(tmp_path / "artifacts")
    key = workspace_key("xsky-r-1", None, None)
    assert held_by(store, key) is None  # never claimed
    assert claims.take(store, key, 0, claims.Holder("vm-2", "q-host-vm-2", 0), "xsky-r-1")
    assert held_by(store, key) == "vm-2"

    absent = tmp_path / "runs" / "xsky-r-1" / "workspace"
    said = where_held("xsky-r-1", absent, "laptop", "vm-2")
    assert said is not None and "on host 'vm-2'" in said and "XSKY_HOST=vm-2" in said
    assert "not on this one ('laptop')" in said
    absent.mkdir(parents=True)  # a copy left here by an agent that ran here before
    said = where_held("xsky-r-1", absent, "laptop", "vm-2")
    assert said is not None and "holds xsky-r-1's workspace now" in said and "may be behind" in said
    # this host holds it, or nobody claimed it (a shared disk): nothing to say
    assert where_held("xsky-r-1", absent, "vm-2", "vm-2") is None
    assert where_held("xsky-r-1", absent, "laptop", None) is None
