"""A refused update reaches the stock ``temporal`` CLI as one sentence, said once: the
validator's rejection was chained to the core's ``Rejected`` it came from, and the CLI printed
the failure and its cause — `no request 'Q-9'; pending requests: Q-1 (type: Rejected,
retryable: false): no request 'Q-9'; pending requests: Q-1 (type: Rejected, retryable: true)`."""

from __future__ import annotations

import pytest

from tests.conftest import Env
from tests.integration.helpers import ask, plan, wait_requests
from tests.integration.test_refusals import temporal

pytestmark = pytest.mark.integration


async def test_a_refused_update_is_said_once_to_the_stock_cli(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Which region?")))
    await wait_requests(handle, 1)
    code, out = await temporal(
        env,
        "workflow",
        "update",
        "execute",
        "--workflow-id",
        handle.id,
        "--name",
        "answer",
        "--input",
        '{"requestId": "Q-9", "text": "x"}',
    )
    assert code != 0 and out.count("no request 'Q-9'") == 1, out
    assert "retryable: true" not in out, out
    await handle.cancel()
