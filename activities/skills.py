"""Skills an agent can use: listed in its system prompt, read with read_skill.

A skill is a folder ``<skills home>/<name>/SKILL.md`` whose front matter holds ``name``
and ``description`` (the Agent Skills format). The skills home is ``XSKY_SKILLS``, else
``$XSKY_HOME/skills``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from activities.tools import ToolError, cap_text

_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


def skills_home() -> Path:
    return Path(os.environ.get("XSKY_SKILLS") or Path(os.environ.get("XSKY_HOME") or ".xsky") / "skills")


def front_matter(text: str) -> dict[str, str]:
    m = _FRONT.match(text)
    if not m:
        return {}
    fields: dict[str, str] = {}
    for line in m.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not line.startswith((" ", "\t")):
            fields[key.strip()] = value.strip().strip('"').strip("'")
    return fields


def listing(names: list[str]) -> str:
    """'- name: description' for each bound skill that exists."""
    lines = []
    for name in names:
        path = skills_home() / name / "SKILL.md"
        if path.is_file():
            meta = front_matter(path.read_text(encoding="utf-8", errors="replace"))
            lines.append(f"- {name}: {meta.get('description', '')}".rstrip(": "))
    return "\n".join(lines)


def read_skill(name: str, allowed: list[str]) -> str:
    if name not in allowed:
        raise ToolError(f"skill {name!r} is not bound to this role; bound skills: {', '.join(allowed) or 'none'}")
    path = skills_home() / name / "SKILL.md"
    if not path.is_file():
        raise ToolError(f"skill {name!r} has no SKILL.md under {skills_home()}")
    return cap_text(path.read_text(encoding="utf-8", errors="replace"), 40_000, "skill")[0]
