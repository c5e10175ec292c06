"""The leader's line without a parenthesis inside another (walk11: `status` said "leader: off
(no model configured on the workers (T-3 was answered offline)): mechanical rules only")."""

from __future__ import annotations

import pytest

from cli.board import leader_line


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        (
            "leader: off (no model configured on the workers (T-3 was answered offline)): "
            "mechanical rules only · goal not checked: T-3 answered offline (no model)",
            "leader: off (no model configured on the workers; T-3 was answered offline): "
            "mechanical rules only · goal not checked: T-3 answered offline (no model)",
        ),
        (  # one deep: as it is
            "leader: off (no model configured on the workers): mechanical rules only",
            "leader: off (no model configured on the workers): mechanical rules only",
        ),
        ("leader: act (model gpt-4o)", "leader: act (model gpt-4o)"),
        ("leader: off (a (b) c (d)) e", "leader: off (a; b c; d) e"),
        ("leader: off (unbalanced)) (x)", "leader: off (unbalanced)) (x)"),
        # not the leader's line (an agent's question on the board): never touched
        ("T-2 asks (Q-1): is it (a) or (b (c))?", "T-2 asks (Q-1): is it (a) or (b (c))?"),
    ],
)
def test_a_parenthesis_inside_another_is_said_after_a_semicolon(said: str, shown: str) -> None:
    assert leader_line(said) == shown


def test_the_ledger_command_shows_the_leaders_line_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from cli.main import main
    from client import XSky
    from xsky.leader.ledger import LedgerView

    view = LedgerView(
        mode="off (no model configured on the workers (T-3 was answered offline)): mechanical "
        "rules only — the goal is not checked",
        goal="a goal",
        goal_check="not checked: T-3 answered offline (no model)",
    )

    async def ledger(offset: int, limit: int) -> LedgerView:
        return view

    async def get(run_id: str) -> SimpleNamespace:
        return SimpleNamespace(id=run_id, ledger=ledger)

    async def connect(settings: object) -> SimpleNamespace:
        return SimpleNamespace(get=get)

    monkeypatch.setattr(XSky, "connect", staticmethod(connect))
    assert main(["ledger", "run-1"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert said.startswith(
        "leader: off (no model configured on the workers; T-3 was answered offline): "
        "mechanical rules only"
    ), said
