"""walk8: `fork RUN T-2` of a run whose large T-1 result `starter.py gc` had removed started
a fork whose T-2 failed at once ("artifact … is no more: … removed by `starter.py gc`"). The
fork is refused before it starts, naming the result it needs."""

from __future__ import annotations

from client.fork import carried, gone_inputs
from xsky.artifacts import ArtifactRef
from xsky.plan.xml import parse_workflow
from xsky.runs import AgentReport

PLAN = parse_workflow(
    '<workflow name="big"><agent name="shell" id="1"><task>big</task>'
    '<config>{"tool": "shell", "command": "seq 1 5000"}</config></agent>'
    '<agent name="shell" id="2" depends="1"><task>count</task>'
    '<config>{"tool": "shell", "command": "wc -l"}</config></agent>'
    '<agent name="shell" id="3"><task>other</task>'
    '<config>{"tool": "shell", "command": "date"}</config></agent></workflow>'
)
REF = ArtifactRef(uri="artifact:big1/1/v1-d1-result.txt", size=23892, sha256="0" * 64)
REPORTS = [
    AgentReport(id="1", task_id="T-1", name="shell", status="completed", result_ref=REF),
    AgentReport(id="2", task_id="T-2", name="shell", status="completed", result="4999"),
    AgentReport(id="3", task_id="T-3", name="shell", status="completed", result="now"),
]
GONE = "removed by `starter.py gc` on 2026-12-07 13:46 (7 objects)"


def gone_of(run: str) -> str | None:
    return GONE if run == "big1" else None


def test_a_fork_that_needs_a_result_gc_removed_is_named() -> None:
    kept = carried(PLAN, PLAN, "2", REPORTS)
    assert gone_inputs(PLAN, kept, gone_of) == [
        f"T-1's result (stored with big1, whose stored objects were {GONE})"
    ]


def test_a_fork_that_does_not_need_it_or_runs_it_again_is_not_refused() -> None:
    assert gone_inputs(PLAN, carried(PLAN, PLAN, "3", REPORTS), gone_of) == []  # T-3 needs none
    assert gone_inputs(PLAN, carried(PLAN, PLAN, "1", REPORTS), gone_of) == []  # T-1 runs again
    assert gone_inputs(PLAN, carried(PLAN, PLAN, "2", REPORTS), lambda run: None) == []


def test_a_follow_up_that_needs_a_result_gc_removed_is_named() -> None:
    # walk8: `retry` of an ended run has the same gap — a follow-up retrying T-2 (it failed)
    # carries T-1's removed result, and T-2 would fail at once on it
    from client.fork import still_carried

    failed = [*REPORTS[:1], REPORTS[1].model_copy(update={"status": "failed"}), REPORTS[2]]
    carried_over = [r for r in failed if r.status == "completed"]
    kept = still_carried(PLAN, carried_over, ["2"])
    assert [r.id for r in kept] == ["1", "3"]
    assert gone_inputs(PLAN, kept, gone_of) == [
        f"T-1's result (stored with big1, whose stored objects were {GONE})"
    ]
    # retrying T-1 too runs it again: nothing it needs is gone
    assert gone_inputs(PLAN, still_carried(PLAN, carried_over, ["1"]), gone_of) == []


def test_a_run_whose_folder_is_not_its_id_is_found_removed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # review14: the check read gc's mark of the folder an artifact's URI names as if it were
    # the run's id — a run id the store changes (`plan:1`, one beginning with "_", one over
    # 120 characters) was hashed twice, and its removal never seen.
    import json

    from activities.artifacts import removed_by_gc
    from activities.storage.local import LocalStore
    from xsky.artifacts import artifact_path, gc_mark_key

    store = LocalStore(tmp_path)
    for run_id in ("plan:1", "_pages", "r" * 150):
        mark = {"removedAt": "2026-12-07T13:46:00", "objects": 7}
        store.put(gc_mark_key(run_id), json.dumps(mark).encode())
        uri = "artifact:" + artifact_path(run_id, "1", "v1-d1-result.txt")
        ref = ArtifactRef(uri=uri, size=23892, sha256="0" * 64)
        kept = [REPORTS[0].model_copy(update={"result_ref": ref})]
        lost = gone_inputs(PLAN, kept, lambda folder: removed_by_gc(store, folder, folder=True))
        assert len(lost) == 1 and "removed by `starter.py gc`" in lost[0], (run_id, lost)
