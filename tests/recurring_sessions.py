"""Sessions of recurring work, in Claude Code's raw shape, for the recurrence tests and bench.

Modelled on the measured corpus (issue 40): four sessions that each "work on a bead" of an
issue tracker — show the bead, read the code, edit, run the tests, commit, close the bead —
with a different bead, title and code each time; and an unrelated pair that shares words
("analyze … sessions") but not steps: one runs scripts over session logs, the other reads
and edits a web app's session handling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.skill_library_helpers import claude_session

BEADS = [
    ("xsky-12", "retry uploads that time out", "uploader.py"),
    ("xsky-31", "show the queue depth in the status page", "status.py"),
    ("xsky-40", "drop the legacy config reader", "config.py"),
    ("xsky-57", "cap the log files at 10 MB", "logs.py"),
]


def bead_steps(bead: str, path: str) -> list[str | tuple[str, dict[str, Any]]]:
    return [
        f"bd show {bead}",
        ("Read", {"file_path": f"src/{path}"}),
        ("Edit", {"file_path": f"src/{path}", "old_string": "a", "new_string": "b"}),
        *["pytest -q"] * 5,
        f"git commit -am 'fix {bead}'",
        f"bd close {bead}",
    ]


def bead_prompt(bead: str, title: str) -> str:
    return (
        f"Work on bead {bead}: {title}. Read the bead with bd show, implement it, run the "
        "tests, commit and close the bead when it is done."
    )


def write_bead_sessions(projects: Path, n: int = 4) -> list[Path]:
    return [
        # as measured: the tests fail four times before they pass (UX 7, worth 6 each, offline)
        claude_session(
            projects,
            "tracker",
            bead_prompt(bead, title),
            bead_steps(bead, path),
            failing=frozenset({3, 4, 5, 6}),
        )
        for bead, title, path in BEADS[:n]
    ]


ANALYZE_LOGS = (
    "Analyze the agent sessions: find which sessions failed and why, and write a short report.",
    [
        "ls logs/sessions",
        "python3 scripts/count_errors.py logs/sessions",
        "python3 scripts/count_errors.py --by-tool logs/sessions",
        "sort -k2 -n report.txt",
    ],
)
ANALYZE_WEB = (
    "Analyze the sessions table: find why sessions expire early and fix it.",
    [
        ("Grep", {"pattern": "session", "path": "app"}),
        ("Read", {"file_path": "app/auth/session.py"}),
        ("Read", {"file_path": "app/settings.py"}),
        ("Edit", {"file_path": "app/settings.py", "old_string": "a", "new_string": "b"}),
    ],
)


def write_unrelated_pair(projects: Path) -> list[Path]:
    return [
        claude_session(projects, "tracker", prompt, steps)
        for prompt, steps in (ANALYZE_LOGS, ANALYZE_WEB)
    ]
