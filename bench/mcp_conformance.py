"""The client side of the MCP conformance suite (npm ``@modelcontextprotocol/conformance``,
installed by ``make install``) against xsky's MCP client (``tests/mcp/conformance_client.py``:
through the egress proxy, as a worker connects): every client scenario, a few at a time, held
against the expected-failures baseline ``tests/mcp/conformance-baseline.yml``. Exits 1 when a
scenario outside the baseline fails, or one in it passes (the baseline is stale).

    python bench/mcp_conformance.py [--parallel 3] [--scenario NAME ...]

``sse-retry`` checks the client's reconnection delay to ±200 ms, so a machine under load can
fail it; ``make test`` runs ``initialize`` and ``tools_call``
(tests/integration/test_mcp_conformance.py).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MCP = ROOT / "tests" / "mcp"
SUITE = MCP / "node_modules" / ".bin" / "conformance"
CLIENT = f"{sys.executable} {MCP / 'conformance_client.py'}"


def baseline() -> set[str]:
    return set(yaml.safe_load((MCP / "conformance-baseline.yml").read_text())["client"])


async def scenarios() -> list[str]:
    proc = await asyncio.create_subprocess_exec(
        str(SUITE), "list", "--client", stdout=asyncio.subprocess.PIPE, cwd=MCP
    )
    out, _ = await proc.communicate()
    return re.findall(r"^\s+- (\S+)", out.decode(), re.M)


async def passes(scenario: str, gate: asyncio.Semaphore) -> bool:
    """Does xsky's client pass this scenario (the suite's own verdict)?"""
    async with gate:
        proc = await asyncio.create_subprocess_exec(
            str(SUITE),
            "client",
            "--command",
            CLIENT,
            "--scenario",
            scenario,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=MCP,
        )
        out, _ = await proc.communicate()
    return proc.returncode == 0 and "OVERALL: PASSED" in out.decode()


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parallel", type=int, default=3)
    ap.add_argument(
        "--scenario", action="append", help="only these (default: every client scenario)"
    )
    args = ap.parse_args()
    names = args.scenario or await scenarios()
    expected = baseline()
    gate = asyncio.Semaphore(args.parallel)
    started = time.monotonic()
    verdicts = dict(
        zip(names, await asyncio.gather(*(passes(n, gate) for n in names)), strict=True)
    )
    passed = [n for n, ok in verdicts.items() if ok]
    unexpected = [n for n, ok in verdicts.items() if not ok and n not in expected]
    stale = [n for n in passed if n in expected]
    print(
        f"MCP conformance, client side: {len(names)} scenarios in {time.monotonic() - started:.0f}s"
    )
    print(f"  passed ({len(passed)}): {', '.join(passed)}")
    print(f"  failed as the baseline expects ({len(expected & set(names)) - len(stale)})")
    if unexpected:
        print(f"  FAILED, not in the baseline: {', '.join(unexpected)}")
    if stale:
        print(f"  passed but in the baseline (remove them): {', '.join(stale)}")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
