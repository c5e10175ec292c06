"""`gc --older-than DAYS` takes a number of days from 0 to a century: NaN, infinity and
absurd numbers are a usage error, not a traceback from the date arithmetic."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from client.gc import collect
from xsky.errors import UsageError


@pytest.mark.parametrize("days", [float("nan"), float("inf"), 1e308, -1.0, 36501.0])
def test_days_that_are_no_date_are_refused_with_the_range(days: float) -> None:
    unused: Any = None  # (refused before the server or the store is asked anything)
    with pytest.raises(UsageError) as said:
        asyncio.run(collect(unused, unused, days))
    assert "--older-than" in str(said.value)
    assert "a number from 0 to 36500" in str(said.value)
