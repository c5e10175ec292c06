"""A mistyped run id names the nearest recent run — `status`, `log`, `follow` … of a typo said
only "no run with id …" (walk10), where a mistyped command or option names the right one."""

from __future__ import annotations

import uuid

import pytest

from client import XSky
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, plan
from tests.integration.test_cli_runs import starter
from xsky.errors import RunNotFoundError

pytestmark = pytest.mark.integration


async def test_a_mistyped_run_id_names_the_nearest_recent_run(env: Env):
    await env.start_worker()
    wid = f"xsky-typo-{uuid.uuid4().hex[:6]}"
    handle = await env.start(plan(ask("1", "Which region?")), workflow_id=wid)
    x = XSky(env.client, env.settings)

    async def suggested() -> None:
        with pytest.raises(RunNotFoundError, match=f"did you mean {wid}"):
            await x.get(wid[:-1] + ("0" if wid[-1] != "0" else "1"))  # the last letter wrong

    await eventually(suggested, 30)  # (the server lists a run a moment after it started)
    code, _, err = await starter(env, "status", wid.removeprefix("xsky-"))  # the prefix left out
    assert code == 2 and f"(did you mean {wid}?)" in err, err
    # in capitals (walk11: `status MY-FIRST-RUN` suggested nothing), by every command
    for command in (["status"], ["result"], ["log", "T-1"], ["diff", wid]):
        typed = wid.removeprefix("xsky-").upper()
        code, _, err = await starter(env, command[0], typed, *command[1:])
        assert code == 2 and f"(did you mean {wid}?)" in err, (command, err)
    # nothing near: no suggestion
    with pytest.raises(RunNotFoundError) as e:
        await x.get("zzzz-unrelated")
    assert "did you mean" not in str(e.value)
    await handle.terminate("test over")
