"""A mistyped run id is answered with the nearest recent run's, letters' case aside (walk11:
`status MY-FIRST-RUN` said only "no run with id MY-FIRST-RUN" though xsky-my-first-run-5bbd57
was the newest run) — one suggestion for status, log, result and every command taking a run id
(client/handle.py XSky.get), `plan` and `ui`."""

from __future__ import annotations

import pytest

from xsky.run_ids import near_run_ids

IDS = ["xsky-my-first-run-5bbd57", "xsky-slow-2adde3", "xsky-other-000000", "xsky-slow-2adde3"]


def test_a_run_id_in_another_case_is_suggested() -> None:
    assert near_run_ids("MY-FIRST-RUN", IDS) == ["xsky-my-first-run-5bbd57"]
    assert near_run_ids("XSKY-MY-FIRST-RUN-5BBD57", IDS) == ["xsky-my-first-run-5bbd57"]
    assert near_run_ids("My-Frist-Run-5bbd57", IDS, parts=False) == ["xsky-my-first-run-5bbd57"]


def test_what_was_suggested_before_still_is() -> None:
    assert near_run_ids("xsky-my-frist-run-5bbd57", IDS) == ["xsky-my-first-run-5bbd57"]
    assert near_run_ids("2adde3", IDS) == ["xsky-slow-2adde3"]  # its end, once
    assert near_run_ids("slow-2adde3", IDS, parts=False) == ["xsky-slow-2adde3"]
    assert near_run_ids("zzzz-unrelated", IDS) == []
    assert near_run_ids("slow", IDS) == []  # too short to be taken for a part


def test_the_ui_command_keeps_the_suggestion(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ui MY-FIRST-RUN` dropped the suggestion XSky.get made (its own 'no run with id')."""
    import cli.ui_cmd as ui_cmd
    from client import XSky
    from xsky.config import load_settings
    from xsky.errors import RunNotFoundError, UsageError

    class Connected:
        async def __aenter__(self) -> Connected:
            return self

        async def __aexit__(self, *exc: object) -> None:
            return None

        async def get(self, run_id: str) -> None:
            raise RunNotFoundError(
                f"no run with id {run_id} (did you mean xsky-my-first-run-5bbd57?)", "XSky.runs()"
            )

    monkeypatch.setattr(XSky, "connect", staticmethod(lambda settings: Connected()))
    with pytest.raises(UsageError, match=r"did you mean xsky-my-first-run-5bbd57\?"):
        ui_cmd._check_run(load_settings(), "MY-FIRST-RUN")
