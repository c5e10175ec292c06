"""The MCP conformance suite's client scenarios that need neither OAuth nor elicitation, against
xsky's MCP client through the egress proxy (the whole suite, with its expected-failures
baseline: ``bench/mcp_conformance.py``, run by ``make bench``)."""

from __future__ import annotations

import asyncio

import pytest

from bench.mcp_conformance import baseline, passes
from tests.integration.mcp_helpers import installed

pytestmark = pytest.mark.integration


async def test_xskys_mcp_client_passes_the_conformance_suites_initialize_and_tools_call():
    installed()
    gate = asyncio.Semaphore(2)
    verdicts = await asyncio.gather(passes("initialize", gate), passes("tools_call", gate))
    assert verdicts == [True, True]
    assert not {"initialize", "tools_call"} & baseline()
