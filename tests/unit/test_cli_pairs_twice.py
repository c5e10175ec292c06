"""A `--var` or `--context` name given twice is refused, naming it (the last value won,
silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.args import parse_pairs
from cli.main import main
from xsky.errors import UsageError

DIAMOND = Path(__file__).resolve().parents[2] / "examples" / "diamond.xml"


@pytest.mark.parametrize("flag", ["--var", "--context"])
def test_a_name_given_twice_is_refused_with_both_values(flag: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_pairs(["topic=a", "other=1", " topic=b"], flag)
    assert str(refused.value) == f"{flag} topic is given twice ('a' and 'b'); keep one"


def test_validate_refuses_a_variable_given_twice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(DIAMOND), "--var", "topic=a", "--var", "topic=b"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "--var topic is given twice ('a' and 'b'); keep one" in said


def test_run_refuses_a_context_value_given_twice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")  # (refused before it is asked)
    argv = ["run", str(DIAMOND), "--var", "topic=x", "--context", "k=1", "--context", "k=2"]
    assert main(argv) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "--context k is given twice ('1' and '2'); keep one" in said
