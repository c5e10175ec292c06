"""worker.py's own options: a mistyped one is said with the option it is a typo of."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_mistyped_worker_option_names_the_one_it_is_near() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "worker.py"), "--no-leadr"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert res.returncode == 2
    assert "unknown option --no-leadr — did you mean --no-leader?" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
