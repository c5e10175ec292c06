"""`approve ID A-1 --run` on a loop of 50 shell items, each asking the same command with its own
item as a value, released one of them: "allow such calls for the rest of the run" read as all
50, and 49 waited on, unsaid. `approve` says how many others wait on the same call."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

import cli.steer_cmd
from cli.main import main
from xsky.leader.state import HumanRequest, InterventionResult

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def _asks(n: int, command: str = 'echo $(( "${XSKY_V1}" * 2 ))') -> HumanRequest:
    return HumanRequest(
        id=f"A-{n}",
        kind="approval",
        task_id=f"T-each[{n}]",
        dispatch=1,
        text="shell",
        tool="shell",
        arguments={"command": command, "values": {"XSKY_V1": str(n)}},
        created_at=NOW,
        deadline=NOW,
    )


class _Run:
    def __init__(self) -> None:
        self.pending = [_asks(n) for n in range(1, 5)] + [_asks(9, "ls")]

    async def requests(self) -> list[HumanRequest]:
        return list(self.pending)

    async def approve(self, request: str, decision: str, message: Any) -> InterventionResult:
        self.pending = [r for r in self.pending if r.id != request]
        return InterventionResult(message=f"{request}: {decision}")


@pytest.mark.parametrize("decision", [[], ["--run"]])
def test_approve_says_how_many_others_wait_on_the_same_call(
    decision: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _Run()

    async def connected(args: Any) -> tuple[None, _Run]:
        return None, run

    monkeypatch.setattr(cli.steer_cmd, "_run", connected)
    assert main(["approve", "xsky-r-1", "A-1", *decision]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert (
        "note: 3 other request(s) wait on the same shell call with other values (A-2, A-3, A-4)"
        in said
    ), said
    # walk8: "an approval covers a call with its own values, for the run too" — but an allow
    # for the run lets every later call of the command run, whatever its values
    assert "covers a call with its own values" not in said, said
    if decision:
        assert "lets later calls of this shell command run whatever their values" in said, said
    else:
        assert "an approval answers only its own request" in said, said
    assert "A-9" not in said  # another command
    assert main(["approve", "xsky-r-1", "A-2", "--deny"]) == 0
    assert "note:" not in capsys.readouterr().out  # a denial says nothing of the others
