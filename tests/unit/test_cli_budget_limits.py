"""Limits given at the command line (`budget RUN LIMITS`, `run --budget …`) are refused past
what a budget can hold and show: said with the bound, before the server is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        (
            "tokens=99999999999999999999999999",
            "budget: tokens=99999999999999999999999999 is more than a budget takes; "
            "give at most tokens=1000000000000",
        ),
        ("usd=1e308", "budget: usd=1e+308 is more than a budget takes; give at most usd=1000000"),
        (
            "usd=1e-9",
            "budget: usd=1e-09 is less than a cent, and spend is shown in cents; "
            "give at least usd=0.01",
        ),
        ("minutes=1e300", "budget: minutes=1e+300 is more than a budget takes"),
        ("agents=10000000", "budget: agents=10000000 is more than a budget takes"),
        # empty: the CLI's own form of limits, not the run's JSON one
        ("", "budget is empty; write e.g. tokens=100000"),
    ],
)
def test_absurd_or_empty_limits_are_refused_with_the_bound(
    limits: str, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")  # (never asked: refused before)
    assert main(["budget", "xsky-r-1", limits]) == 2
    text = " ".join(capsys.readouterr().err.split())
    assert f"error: {said}" in text
    assert "cannot reach Temporal" not in text


def test_the_run_flags_take_the_same_bounds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    plan = Path(__file__).resolve().parents[2] / "examples" / "diamond.xml"
    assert main(["run", str(plan), "--var", "topic=x", "--agent-budget", "usd=0.001"]) == 2
    assert "--agent-budget: usd=0.001 is less than a cent" in capsys.readouterr().err


def test_limits_in_range_pass() -> None:
    from cli.budget_cmd import _limits

    limits = _limits("tokens=1000000000000,usd=0.01,minutes=1000000,agents=1000000", "budget")
    assert limits.tokens == 10**12 and limits.usd == 0.01
