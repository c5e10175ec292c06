"""`gc --run ID` of an id the store holds nothing of names the nearest run it does hold, as
every other command that takes a run id names the nearest recent run (walk12: `gc --run
HELLO-644664`, the id in another case, said only that the store held nothing of it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import client.gc as gc
from activities.storage.local import LocalStore
from xsky.errors import UsageError


def _refusal(store: LocalStore, run: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(gc, "open_objects", lambda settings: store)
    with pytest.raises(UsageError) as e:
        asyncio.run(gc.collect(None, None, run=run))  # type: ignore[arg-type]
    return str(e.value)


@pytest.mark.parametrize("typed", ["HELLO-644664", "xsky-helo-644664", "xsky-hello-644664x"])
def test_a_mistyped_run_names_the_nearest_the_store_holds(
    typed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    store.put("xsky-hello-644664/1/out.txt", b"x")
    store.put("_workspaces/w/snap.tar", b"x")
    said = _refusal(store, typed, monkeypatch)
    assert f"holds nothing of {typed} (did you mean xsky-hello-644664?); nothing to remove" in said


def test_an_id_like_none_the_store_holds_says_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    store.put("xsky-hello-644664/1/out.txt", b"x")
    said = _refusal(store, "nope", monkeypatch)
    assert said.endswith("holds nothing of nope; nothing to remove")
