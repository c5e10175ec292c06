"""`fork RUN T-n --id ID` refuses an id that is none, as `run --id` does (it quietly used a
generated one for `--id ""`)."""

from __future__ import annotations

import pytest

import cli.fork_cmd
from cli.main import main


@pytest.mark.parametrize("given", ["", "has space"])
def test_a_fork_id_that_is_none_is_refused_before_anything_starts(
    given: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def never(*_: object, **__: object) -> None:
        raise AssertionError("the server was asked")

    monkeypatch.setattr(cli.fork_cmd.XSky, "connect", never)
    assert main(["fork", "xsky-r-1", "T-1", "--id", given]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"run id {given!r}: use letters, digits and . _ - : (at most 200)" in said
