"""A run's folder name (safe_component): a path component of its own for every id — no id,
chosen by whoever starts a run, names the folder of another run (its workspace, its files,
its outcomes)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from xsky.artifacts import safe_component

IDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1)


def test_an_id_written_as_another_ids_folder_gets_a_folder_of_its_own():
    for victim in ("nightly:2026-12-06", "nightly.", "x" * 200, "a/b"):
        folder = safe_component(victim)
        assert folder != victim  # it had to be changed …
        assert safe_component(folder) != folder  # … and the folder's name, as an id, is too


def test_plain_ids_are_their_own_folders():
    plain = ("xsky-demo-855f4f", "nightly-2026-12-06", "run_1", "w.poll-2", "build-1a2b3c4d5e")
    for name in plain:  # (the last ends as a changed name does, but has no "_": as it is)
        assert safe_component(name) == name


@given(IDS, IDS)
def test_two_ids_share_a_folder_only_if_they_are_one(a: str, b: str):
    if a != b:
        assert safe_component(a) != safe_component(b)
    assert safe_component(a) == safe_component(a)
    assert "/" not in safe_component(a) and safe_component(a) not in (".", "..")


@given(IDS)
def test_the_folder_of_an_id_taken_as_an_id_names_another_folder(a: str):
    folder = safe_component(a)
    if folder != a:
        assert safe_component(folder) != folder
