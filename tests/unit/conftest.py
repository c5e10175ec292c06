"""Fixtures the unit tests share."""

from __future__ import annotations

import pytest

from tests.sandbox_user import OWNERS


@pytest.fixture(params=OWNERS, ids=lambda o: "as-sandbox-user" if o else "as-worker")
def owner(request: pytest.FixtureRequest) -> tuple[int, int] | None:
    """The owner a filesystem operation runs as: None for the worker's own user, else the
    sandbox user's (uid, gid) — the latter only where the tests run as root."""
    return request.param  # type: ignore[no-any-return]
