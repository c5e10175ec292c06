"""Benchmark: how long the command line takes to answer, beside Python's own start.

Each command runs as a person runs it (a new `python starter.py …` process), against a dev
server on free ports, interleaved round by round with its references: `python -c pass` (the
interpreter) and `python -c "import temporalio.client"` (what any command that talks to
Temporal must load). Best of N each: the minimum is the least noisy on a shared machine.

    python bench/cli_start.py [--rounds 7]

Target (issue 37): `validate`, `status` and `list` answer in under 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli.devserver import DevServer, free_port  # noqa: E402 - after the path is set

PLAN = (
    '<workflow name="w"><agent name="llm" id="1"><task>a</task></agent>'
    '<agent name="llm" id="2" depends="1"><task>b {{agent_1_result}}</task></agent>'
    '<agent name="llm" id="3"><task>c</task></agent>'
    '<agent name="llm" id="4" depends="2,3"><task>d</task></agent></workflow>'
)


def wall(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=False, timeout=120)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="xsky-bench-cli-"))
    plan = tmp / "four.xml"
    plan.write_text(PLAN)
    server = DevServer(db_path=tmp / "cli.db", port=free_port(), headless=True)
    server.start(timeout=90)
    try:
        env = {**os.environ, "TEMPORAL_ADDRESS": server.address, "XSKY_HOME": str(tmp / "x")}
        py = sys.executable
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "import temporalio.client": [py, "-c", "import temporalio.client"],
            "starter.py validate (4 agents)": [py, "starter.py", "validate", str(plan)],
            "starter.py status (unknown id)": [py, "starter.py", "status", "xsky-none"],
            "starter.py list": [py, "starter.py", "list"],
            "starter.py --help": [py, "starter.py", "--help"],
            "starter.py run --help": [py, "starter.py", "run", "--help"],
        }
        best = dict.fromkeys(cases, float("inf"))
        for _ in range(args.rounds):
            for name, argv in cases.items():
                best[name] = min(best[name], wall(argv, env))
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # (its server's database, left in /tmp each run)

    base = best["python -c pass"]
    print(f"best of {args.rounds} rounds, each a new process, one dev server")
    print(f"{'':36}{'wall':>9}{'beyond python':>15}")
    for name, seconds in best.items():
        print(f"{name:36}{seconds * 1e3:>7.0f} ms{(seconds - base) * 1e3:>12.0f} ms")
    quick = ["starter.py validate (4 agents)", "starter.py status (unknown id)", "starter.py list"]
    met = all(best[name] < 0.5 for name in quick)
    print(f"target (validate, status, list under 0.5 s): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
