"""``skills …``: the transcript watcher and what it has learned.

skills sources | add-source KIND PATH | remove-source KIND PATH   cli/skills_sources_cmd.py
skills watch [--every 30s] | unwatch | scan --once                cli/skills_watch_cmd.py
skills status | atoms TRAJ                                        cli/skills_status_cmd.py
skills list | show NAME [--branch B] | history NAME | candidates NAME | canary NAME
skills promote NAME | discard NAME                                cli/skill_library_cmd.py
skills export --to DIR [--canary] [--watch]                       cli/skills_export_cmd.py

Each renders what :class:`client.skills.Skills` (or the library's store) returns.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from cli import skill_library_cmd, skills_sources_cmd, skills_status_cmd, skills_watch_cmd

    p = sub.add_parser(
        "skills",
        help="learn skills from coding-agent transcripts (sources, watch, scan, status, atoms)",
    )
    s = p.add_subparsers(dest="skills_command", metavar="ACTION")
    s.required = True
    skills_sources_cmd.register(s)
    skills_watch_cmd.register(s)
    skills_status_cmd.register(s)
    skill_library_cmd.register(s)
