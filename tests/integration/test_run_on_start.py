"""`XSky.run(…, on_start=)` is told the run's id as the run is started — before the wait for a
worker to take its first task — so the CLI can name a run Ctrl-C stopped it from announcing
(walk10: it said "nothing goes on unless `starter.py list` shows it", and the run went on)."""

from __future__ import annotations

import pytest

from client import XSky
from tests.conftest import Env
from tests.integration.helpers import noop, plan

pytestmark = pytest.mark.integration


async def test_on_start_is_told_the_id_of_the_run_started(env: Env):
    await env.start_worker()
    x = XSky(env.client, env.settings)
    seen: list[str] = []
    run = await x.run(plan(noop("1")), on_start=seen.append)
    assert seen == [run.id]
    await run.result()  # (a noop: it ends at once)
