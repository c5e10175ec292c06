"""gc and run folders: a folder made from an id it had to change is asked about by that id;
one that is an id as it is, however it looks, is asked about as itself."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

import client.gc as gc
from activities.storage.local import LocalStore
from xsky.artifacts import safe_component


class _Gone:
    async def describe(self) -> Any:
        raise RPCError("not found", RPCStatusCode.NOT_FOUND, b"")


class _Server:
    """A server that knows no run (their retention passed) and lists none."""

    def get_workflow_handle(self, workflow_id: str) -> _Gone:
        return _Gone()

    async def list_workflows(self, query: str) -> Any:
        for _ in ():
            yield None


def test_an_id_that_only_looks_changed_goes_and_a_changed_one_no_run_owns_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    changed = safe_component("nightly:2026-12-06")  # "nightly_2026-12-06-<hash>"
    for folder in ("nightly-2026120601", changed):
        store.put(f"{folder}/a/out.txt", b"x")
    monkeypatch.setattr(gc, "open_objects", lambda settings: store)
    done = {c.run_id: c for c in asyncio.run(gc.collect(_Server(), None))}  # type: ignore[arg-type]
    # ends in "-" and 10 hex, yet an id as it is: past its retention, removed
    assert done["nightly-2026120601"].removed
    # an id changed into its folder, no run listed for it: kept, with how to remove it
    assert not done[changed].removed and "gc --run ID" in done[changed].why


def test_an_id_that_looks_changed_is_changed_and_its_folder_kept_when_no_run_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    chosen = safe_component("nightly:2026-12-06")  # an id written as another's folder
    folder = safe_component(chosen)  # since v0.11.9 changed again: "<that>-<hash>"
    assert folder.startswith(chosen + "-") and safe_component("nightly-2026120601") == (
        "nightly-2026120601"  # an id of the shape only (no "_", not cut): its own folder
    )
    store.put(f"{folder}/a/out.txt", b"x")
    monkeypatch.setattr(gc, "open_objects", lambda settings: store)
    done = {c.run_id: c for c in asyncio.run(gc.collect(_Server(), None))}  # type: ignore[arg-type]
    assert not done[folder].removed and "gc --run ID" in done[folder].why


class _Running:
    async def describe(self) -> Any:
        class Info:
            status = 1  # RUNNING

        class Raw:
            workflow_execution_info = Info()

        class Desc:
            raw_description = Raw()
            close_time = None

        return Desc()


class _Listed:
    """A server where run "nightly." is running (its folder drops the dot, adds a hash)."""

    def get_workflow_handle(self, workflow_id: str) -> Any:
        return _Running() if workflow_id == "nightly." else _Gone()

    async def list_workflows(self, query: str) -> Any:
        class Row:
            id = "nightly."

        if "XskyLineage" not in query:  # (nothing descends from it)
            yield Row()


def test_a_running_run_whose_id_lost_a_dot_to_its_folder_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a review found its objects removed: the folder has no "_" and was asked about as an id)
    store = LocalStore(tmp_path)
    folder = safe_component("nightly.")
    assert folder.startswith("nightly_-")  # (its dot a "_" since v0.11.9; dropped before)
    store.put(f"{folder}/a/out.txt", b"x")
    monkeypatch.setattr(gc, "open_objects", lambda settings: store)
    (kept,) = asyncio.run(gc.collect(_Listed(), None))  # type: ignore[arg-type]
    assert not kept.removed and "running" in kept.why


def test_gc_removes_the_pages_a_runs_browser_agents_left_with_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser agent's page (its cookies: a login) is kept apart from the run's folder,
    which its commands may read; gc removes it with the run, and another run's stays."""
    from xsky.artifacts import page_key

    store = LocalStore(tmp_path)
    store.put("old-run/a/out.txt", b"x")
    store.put(page_key("old-run", "a"), b"{}")
    store.put(page_key("other-run", "a"), b"{}")
    monkeypatch.setattr(gc, "open_objects", lambda settings: store)
    done = asyncio.run(gc.collect(_Server(), None, run="old-run"))  # type: ignore[arg-type]
    assert done[0].removed and done[0].objects == 2
    assert store.keys("_pages/") == [page_key("other-run", "a")]


def test_a_gc_stopped_half_way_leaves_a_mark_that_says_so_and_the_next_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # chaos11: the mark was written after the deletes — a gc killed among them left a run
    # with objects missing and no word of why (log and result blamed the store's setup).
    from activities.artifacts import removed_by_gc

    store = LocalStore(tmp_path)
    for n in range(6):
        store.put(f"gone-run/{n}/out.txt", b"x")

    class Killed(BaseException):
        pass

    deleted: list[str] = []
    real_delete = store.delete

    def delete(key: str) -> None:
        if len(deleted) == 3:
            raise Killed  # the gc's process dies here
        deleted.append(key)
        real_delete(key)

    monkeypatch.setattr(gc, "open_objects", lambda settings: store)
    monkeypatch.setattr(store, "delete", delete)
    with pytest.raises(Killed):
        asyncio.run(gc.collect(_Server(), None))  # type: ignore[arg-type]
    said = removed_by_gc(store, "gone-run")
    assert said is not None and "not finished" in said and "gc --run gone-run" in said
    monkeypatch.setattr(store, "delete", real_delete)
    (done,) = asyncio.run(gc.collect(_Server(), None))  # type: ignore[arg-type]
    assert done.removed and store.keys("gone-run/") == ["gone-run/_gc.json"]
    said = removed_by_gc(store, "gone-run")
    assert said is not None and said.startswith("removed by `starter.py gc` on")
    # stopped after its last delete, before the mark was said finished: the next gc says it
    store.put(
        "gone-run/_gc.json",
        b'{"removedAt": "2026-12-07T14:00:00", "objects": 6, "unfinished": true}',
    )
    asyncio.run(gc.collect(_Server(), None))  # type: ignore[arg-type]
    said = removed_by_gc(store, "gone-run")
    assert said is not None and said.startswith("removed by `starter.py gc` on 2026-12-07 14:00")
