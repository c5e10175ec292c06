"""walk8: `result RUN` of a run gc had cleaned said of each large result "[stored as
artifact:…; not readable from here]" — the words of a store this machine cannot reach (a wrong
XSKY_STORE) — while `result --agent N` and `log` said gc removed it. The table says gc too."""

from __future__ import annotations

import json
from pathlib import Path

from activities.artifacts import ArtifactStore, RemovedByGc
from cli.board import result_text
from xsky.artifacts import gc_mark_key


def test_a_result_gc_removed_says_so_in_the_results_table(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    ref = store.put_text("big1", "1", "v1-d1-result.txt", "1\n2\n3\n" * 4000)
    (tmp_path / "big1" / "1" / "v1-d1-result.txt").unlink()  # what gc removes …
    mark = tmp_path / gc_mark_key("big1")  # … and the mark it leaves
    mark.write_text(json.dumps({"removedAt": "2026-12-07T13:46:00Z", "objects": 7}))
    try:
        store.read_text(ref)
    except RemovedByGc as e:
        assert e.gone == "removed by `starter.py gc` on 2026-12-07 13:46 (7 objects)"
    said = result_text(None, ref, store.read_text)
    assert said.endswith(
        "bytes; its run's stored objects were removed by `starter.py gc` on 2026-12-07 13:46 "
        "(7 objects)]"
    ), said
    assert "not readable from here" not in said


def test_a_result_the_store_does_not_hold_is_still_not_readable_from_here(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    ref = store.put_text("r2", "1", "v1-d1-result.txt", "x" * 20000)
    (tmp_path / "r2" / "1" / "v1-d1-result.txt").unlink()  # no gc mark: another store
    assert result_text(None, ref, store.read_text).endswith("bytes; not readable from here]")
