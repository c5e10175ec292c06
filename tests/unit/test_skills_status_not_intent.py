"""``skills status`` lists what the adapters recognised as not a person's intent apart from the
record types, by kind, so what was kept out of the tasks is visible."""

from __future__ import annotations

from activities.skills.store import RecordCount
from cli.render import out
from cli.skills_status_cmd import _print_records


def test_not_intent_counts_get_their_own_table_by_kind() -> None:
    notes = RecordCount("claude-code", "not-intent/task-notification", "interpreted")
    warm = RecordCount("claude-code", "not-intent/warm-up", "interpreted")
    user = RecordCount("claude-code", "user", "interpreted")
    for row, n in ((notes, 3), (warm, 2), (user, 5)):
        row.count = n
        row.trajs.add("traj_cc_app_1")
    with out.capture() as captured:
        _print_records([notes, warm, user])
    text = captured.get()
    assert "recognised as not a person's intent (5 in all)" in text
    assert "task-notification" in text and "warm-up" in text
    assert "records read (5 in all, 0 kept opaque)" in text
    assert "not-intent/" not in text  # the kind alone, not the record key
