"""SKILL.md to the Agent Skills specification, checked before anything is committed.

The reference validator (``skills-ref``, from agentskills.io) checks the front matter; on
top of it we hold what the issue and Anthropic's ``quick_validate.py`` ask: an ASCII name
``[a-z0-9-]`` equal to the folder, a description of 1–1024 characters without ``<``/``>``
that says what the skill does *and when to use it*, our own fields only under
``metadata`` (string → string), and a body of at most 500 lines; and the authoring rules
of :mod:`xsky.skills.rules` (no paths of the recording machine, no atom ids, no quoted
prompts, no keyword-soup description).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from xsky.skills import rules

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_BODY_LINES = 500
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
_FRONT = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.S)


def slugify(text: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A spec-valid, unused skill name from free text (``Deploy FastAPI!`` → ``deploy-fastapi``)."""
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    base = words[:MAX_NAME].rstrip("-")
    if len(words) > MAX_NAME and "-" in base:
        base = base.rsplit("-", 1)[0]
    base = base or "skill"
    name, n = base, 2
    while name in taken:
        suffix = f"-{n}"
        name, n = base[: MAX_NAME - len(suffix)].rstrip("-") + suffix, n + 1
    return name


def render(name: str, description: str, body: str, metadata: dict[str, str] | None = None) -> str:
    front: dict[str, Any] = {"name": name, "description": description}
    if metadata:
        front["metadata"] = {str(k): str(v) for k, v in metadata.items()}
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000).strip()
    return f"---\n{head}\n---\n\n{body.strip()}\n"


def split(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body); an empty mapping when there is no (readable) front matter."""
    m = _FRONT.match(text)
    if not m:
        return {}, text
    try:
        front = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return {}, text[m.end() :]
    return (front if isinstance(front, dict) else {}), text[m.end() :]


def problems(
    skill_dir: Path, *, prompts: Sequence[str] = (), homes: Sequence[str] = ()
) -> list[str]:
    """Everything wrong with a skill folder; empty when it may be committed.

    ``prompts``: the recorded prompts (atom intents) the skill was learned from, which it
    must not quote; ``homes``: the recording machine's home folders, beyond the usual ones.
    """
    from skills_ref import validate  # the reference validator

    path = skill_dir / "SKILL.md"
    if not path.is_file():
        return [f"{skill_dir.name}: there is no SKILL.md"]
    text = path.read_text(encoding="utf-8", errors="replace")
    found = [str(p) for p in validate(skill_dir)]
    front, body = split(text)
    name = front.get("name")
    if isinstance(name, str) and (not NAME_RE.match(name) or len(name) > MAX_NAME):
        found.append(
            f"name {name!r} must be 1-{MAX_NAME} characters of a-z, 0-9 and single hyphens inside"
        )
    description = front.get("description")
    if isinstance(description, str):
        if "<" in description or ">" in description:
            found.append("the description must not contain '<' or '>'")
        if not re.search(r"(?i)\bwhen\b", description):
            found.append("the description must say when to use the skill (e.g. '… Use when …')")
        found += rules.description_problems(description, prompts)
    metadata = front.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        found.append("metadata must map strings to strings (quote numbers and lists as text)")
    lines = body.strip("\n").count("\n") + 1 if body.strip() else 0
    if lines > MAX_BODY_LINES:
        found.append(
            f"the body has {lines} lines; keep it to {MAX_BODY_LINES} and move detail into references/"
        )
    if not body.strip():
        found.append("the body is empty: say how to do the task")
    if "allowed-tools" in front:
        # Agents that read the skill (Claude Code among them) pre-approve what it lists while
        # it is active; a skill xsky writes is learned from transcripts a prompt injection
        # may have written, so it grants nothing: the agent asks, as without it.
        found.append(
            "allowed-tools: a skill xsky writes does not pre-approve tools; remove the field "
            "(the agent that uses the skill is asked for them as ever)"
        )
    found += rules.path_problems("SKILL.md", text, homes)
    found += rules.id_problems("SKILL.md", text)
    found += rules.body_problems(body, prompts)
    found += rules.fetch_and_run_problems("SKILL.md", body)
    for extra in sorted(p for p in skill_dir.rglob("*") if p.is_file() and p != path):
        rel = extra.relative_to(skill_dir).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue  # bookkeeping (.candidates.yml, .git): not part of the skill
        try:
            raw = extra.read_bytes()
        except OSError:
            continue
        if rel.startswith("scripts/"):  # what runs is checked whatever its bytes
            found += rules.fetch_and_run_problems(rel, raw.decode("utf-8", errors="replace"))
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # binary assets are not read by an agent as text
        found += rules.path_problems(rel, content, homes, script=rel.startswith("scripts/"))
        found += rules.id_problems(rel, content)
        found += rules.fetch_and_run_problems(rel, content)
    return list(dict.fromkeys(found))


def description_of(text: str) -> str:
    front, _ = split(text)
    value = front.get("description")
    return value if isinstance(value, str) else ""
