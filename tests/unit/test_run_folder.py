"""A run's folder in the store is its own: never a folder the store keeps for itself, never
another run's. Any Temporal client can start a run with any workflow id (xsky's CLI refuses
ids that begin with "_"): a run `_pages` whose agent was named after another run wrote that
run's page file — its login — as an artifact, and read its own `_pages/` folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activities.artifacts import open_store
from xsky.artifacts import artifact_path, page_key, pages_folder, run_folder, safe_component
from xsky.config import load_settings


def test_a_run_named_after_a_store_folder_cannot_write_another_runs_page() -> None:
    victim = page_key("victim-run", "login")  # _pages/victim-run/login.json
    assert artifact_path("_pages", "victim-run", "login.json") != victim
    assert not artifact_path("_pages", "victim-run", "login.json").startswith("_")
    assert not artifact_path("_workspaces", "shared", "_workspace").startswith("_workspaces/")


def test_a_run_id_as_given_keeps_its_folder() -> None:
    # every run the CLI starts: its folder is its id, as before
    assert run_folder("xsky-demo-1a2b3c") == "xsky-demo-1a2b3c"
    assert run_folder("a/b") == safe_component("a/b")


ids = st.text(min_size=1, max_size=40) | st.sampled_from(
    ["_pages", "_workspaces", "_x", "run_pages", "_pages-0123456789"]
).flatmap(lambda s: st.sampled_from([s, "run" + s, s + "-" + run_folder(s)[-10:]]))


@given(ids, ids)
def test_two_run_ids_never_share_a_folder_and_none_is_the_stores_own(a: str, b: str) -> None:
    assert not run_folder(a).startswith("_")
    if a != b:
        assert run_folder(a) != run_folder(b)
    spelled = "run" + safe_component(a)[: 120 - 14] + "-" + run_folder(a)[-10:]
    if spelled != a:  # an id spelled as another's changed folder is changed itself
        assert run_folder(spelled) != run_folder(a)


def test_an_agents_artifact_of_a_run_named_pages_lands_in_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path))
    settings = load_settings()
    store = open_store(settings)
    ref = store.put_text("_pages", "victim-run", "login.json", '{"cookies": [{"name": "x"}]}')
    assert store.read_bytes(ref).startswith(b'{"cookies"')  # the run reads its own artifact
    assert not (settings.artifacts / pages_folder("victim-run")).exists()
    assert not (settings.artifacts / "_pages").exists()
