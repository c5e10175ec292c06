"""Steering commands refuse at the command line what the run could not even be sent."""

from __future__ import annotations

import pytest

from cli.main import main


@pytest.mark.parametrize("seconds", ["nan", "inf", "NaN", "abc"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused_with_the_range(
    seconds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # (NaN reached the run as "refused: Failed decoding arguments")
    with pytest.raises(SystemExit) as done:
        main(["timeout", "xsky-r-1", "T-4", seconds])
    assert done.value.code == 2
    said = capsys.readouterr().err
    assert f"a timeout of {seconds} seconds is not one: give 1 to 604800 seconds" in said
