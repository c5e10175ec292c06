"""SkillEditAgent: a skill's pending candidates → a new version of its folder, checked, committed.

The editor works in a scratch copy of the skill's current version (``baby`` or ``main``):

- with a model, an agent loop with the tools ``AtomTaskRead`` (a candidate atom),
  ``ReadTraj`` (a slice of its trajectory view by offsets), ``read_file`` / ``write_file`` /
  ``list_files`` (inside the skill folder only: SKILL.md, scripts/, references/, assets/)
  and ``validate``; it sees all pending candidates at once (consolidating over a pool);
- without one, a deterministic writer builds SKILL.md from the atoms (labelled offline).

Nothing is committed unless the folder passes :func:`xsky.skills.spec.problems` (the
reference validator and our stricter rules) and every script under ``scripts/`` runs to
exit 0 in a scrubbed, time-limited process group. Then ``commit_baby_to_main`` (the first
version: the commit on ``baby``, which is renamed ``main``) or ``commit_to_staging`` (a
``staging`` branch off ``main``), by plumbing with the expected old ref, so a killed
worker leaves no half-written commit and the re-run finds its own by ``Edit-Id``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from activities import llm
from activities.sandbox import workspace as workspaces
from activities.sandbox.confine import confinement_for, sandbox_settings
from activities.skills import git as skill_git
from activities.skills.files import read_atom, skill_dir
from activities.tools import ToolContext
from activities.tools.shell import run_process
from xsky.config import load_settings
from xsky.security.settings import worker_layers
from xsky.skills.atoms import VERBS, AtomTask, keywords
from xsky.skills.layout import md_path
from xsky.skills.models import EditInput, EditResult
from xsky.skills.spec import MAX_BODY_LINES, problems, render

MAX_TURNS = 24
MAX_FIX_ROUNDS = 3
SCRIPT_TIMEOUT = 60.0
WRITABLE = re.compile(r"^(SKILL\.md|(scripts|references|assets)/[A-Za-z0-9._\-/]+)$")
RUNNERS = {".sh": ["bash"], ".py": ["python3"]}

SYSTEM_PROMPT = """You maintain one Agent Skill: a folder with SKILL.md (and optional scripts/, references/,
assets/) that teaches a coding agent how to do one kind of task well. You are given the skill's current
files and a pool of atoms: episodes from real sessions where this kind of task was done, each with its
intent, summary, UX score (1-10) and used skills. Read the atoms (AtomTaskRead) and, where useful, the
transcript slices they point to (ReadTraj), then write the new version of the folder with write_file.

SKILL.md must follow the Agent Skills specification:
- front matter with only: name (exactly "{slug}"), description (1-1024 characters, no < or >, saying what
  the skill does AND when to use it: "... Use when ..."), optional license, compatibility, allowed-tools,
  and metadata (a map of strings to strings, for anything else);
- a body of at most 500 lines: the concrete steps that worked, the commands, the pitfalls seen in
  low-scoring atoms, how to verify. Focused beats comprehensive; move long detail into references/.
Scripts you ship in scripts/ (.sh or .py) are run before the commit and must exit 0 without network access.
Call validate before you finish; fix every problem it reports. Finish by answering without a tool call."""

_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "AtomTaskRead",
            "description": "Read one candidate atom (all fields).",
            "parameters": {
                "type": "object",
                "required": ["atom_id"],
                "properties": {"atom_id": {"type": "string"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "ReadTraj",
            "description": "Read a slice of a trajectory's .md view by character offsets.",
            "parameters": {
                "type": "object",
                "required": ["traj_id", "offset_start", "offset_end"],
                "properties": {
                    "traj_id": {"type": "string"},
                    "offset_start": {"type": "integer"},
                    "offset_end": {"type": "integer"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "The files of the skill folder being edited.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the skill folder.",
            "parameters": {
                "type": "object",
                "required": ["path"],
                "properties": {"path": {"type": "string"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file of the skill folder (SKILL.md, scripts/…, references/…, assets/…).",
            "parameters": {
                "type": "object",
                "required": ["path", "content"],
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "validate",
            "description": "Check the folder against the Agent Skills specification.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]


def edit_message(inp: EditInput, by: str, kind: str) -> str:
    atoms = ", ".join(c.atom_id for c in inp.candidates)
    weight = sum(c.weightscore for c in inp.candidates)
    return (
        f"{kind}: {inp.slug} v{inp.version} from {len(inp.candidates)} atoms (cumulative weightscore {weight})\n\n"
        f"Atoms: {atoms}\nWritten by: {by}\n\nEdit-Id: {inp.edit_id}\n"
    )


async def edit_skill(
    home: Path, inp: EditInput, target: llm.LLMTarget | None, beat: Callable[[str], None]
) -> EditResult:
    repo = skill_dir(home, inp.slug)
    if not skill_git.is_repo(repo):
        return EditResult(ok=False, message=f"{repo} is not a skill repository")
    done = _already_committed(repo, inp)
    if done is not None:
        return done
    if skill_git.branch_commit(repo, "staging"):
        return EditResult(
            ok=False, message="a staging version is already under canary; no second staging"
        )
    source = "main" if inp.branch == "main" else "baby"
    if skill_git.branch_commit(repo, source) != inp.base_commit and inp.base_commit is not None:
        return EditResult(
            ok=False, message=f"{source} moved since the edit was planned; it is planned again"
        )
    work = home / ".staging" / "edits" / inp.edit_id / inp.slug
    if work.parent.exists():
        shutil.rmtree(work.parent)
    skill_git.export(repo, source, work)
    atoms = [a for c in inp.candidates if (a := read_atom(home, c.traj_id, c.atom_id)) is not None]
    if not atoms:
        return EditResult(ok=False, message="none of the candidate atoms could be read")
    by = "offline"
    if target is not None:
        found = await _model_edit(home, inp, atoms, work, target, beat)
        by = f"model {target.model}"
    else:
        write_offline(inp, atoms, work)
        found = problems(work)
    if found:
        return EditResult(
            ok=False,
            message="the new version does not meet the Agent Skills specification",
            problems=found,
            by=by,
        )
    passed, failure = await _run_scripts(work, beat)
    if failure:
        return EditResult(ok=False, message=failure, scripts=passed, by=by)
    files = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
    if inp.branch == "baby":
        tip = skill_git.branch_commit(repo, "baby")
        commit = skill_git.commit_tree(
            repo, work, tip, edit_message(inp, by, "commit_baby_to_main")
        )
        skill_git.publish(repo, "baby", commit, tip)
        skill_git.rename_baby_to_main(repo)
        branch = "main"
    else:
        commit = skill_git.commit_tree(
            repo, work, inp.base_commit, edit_message(inp, by, "commit_to_staging")
        )
        skill_git.publish(repo, "staging", commit, None)
        branch = "staging"
    shutil.rmtree(work.parent, ignore_errors=True)
    return EditResult(
        ok=True,
        commit=commit,
        branch=branch,
        files=files,
        scripts=passed,
        by=by,
        message=f"{inp.slug}: {branch} {commit[:10]} from {len(atoms)} atoms",
    )


def _already_committed(repo: Path, inp: EditInput) -> EditResult | None:
    """A re-run after a kill between the commit and the reply finds its own commit."""
    for branch in ("main", "staging", "baby"):
        tip = skill_git.branch_commit(repo, branch)
        if tip and f"Edit-Id: {inp.edit_id}" in skill_git.message(repo, tip):
            if branch == "baby":
                skill_git.rename_baby_to_main(repo)
                branch = "main"
            return EditResult(
                ok=True,
                commit=tip,
                branch=branch,
                message=f"{inp.slug}: {branch} {tip[:10]} (already committed)",
            )
    return None


# -- the offline writer -------------------------------------------------------------------------


def _commands(atom: AtomTask) -> list[str]:
    """Tool calls seen in the atom's transcript slice: ``Tool: first line of its input``."""
    found = []
    for m in re.finditer(
        r"### Tool call · ([^\n`]+?)(?: `[^`]*`)?\n(`{3,})\n([^\n]{1,160})", atom.raw_segment
    ):
        line = m.group(3).strip()
        if line and not line.startswith(("***", "{", "[")):
            found.append(f"{m.group(1).strip()}: `{line.replace('`', '')}`")
    return found


def _failures(atom: AtomTask) -> list[str]:
    out = []
    for m in re.finditer(
        r"### Tool result · ([^\n]+?) · error\n(`{3,})\n((?:[^\n]{0,160}\n){1,3})", atom.raw_segment
    ):
        lines = [
            x.strip()
            for x in m.group(3).splitlines()
            if x.strip() and not re.match(r"(?i)^exit code \d+$", x.strip())
        ]
        if lines and not lines[0].startswith("`"):
            out.append(f"{m.group(1).strip()} failed: {lines[0]}")
    return out


def write_offline(inp: EditInput, atoms: list[AtomTask], work: Path) -> None:
    """A deterministic SKILL.md from the atoms, best-scored first (no model)."""
    ranked = sorted(atoms, key=lambda a: (-a.ux_score, a.atom_id))
    words = Counter(w for a in atoms for w in keywords(a.intent) if w not in VERBS and len(w) >= 3)
    topic = ", ".join(w for w, _ in words.most_common(4)) or inp.slug.replace("-", " ")
    lead = " ".join(ranked[0].intent.split()).replace("<", "(").replace(">", ")")[:300].rstrip(".")
    description = (
        f"Steps that worked for tasks like: {lead}. Use when working on {topic} "
        f"(learned from {len(atoms)} recorded sessions)."
    )[:1024]
    lines = [
        f"# {inp.slug.replace('-', ' ').capitalize()}",
        "",
        "_Written offline from recorded sessions (no model): the tasks, commands and pitfalls below are "
        "quoted from them._",
        "",
        "## When to use",
        "",
    ]
    lines += [f"- {' '.join(a.intent.split())[:200]}" for a in ranked[:8]]
    lines += ["", "## What worked", ""]
    for a in ranked[:8]:
        lines.append(
            f"- **{' '.join(a.intent.split())[:120]}** (UX {a.ux_score}/10): {' '.join(a.summary.split())[:400]}"
        )
    commands = list(dict.fromkeys(c for a in ranked if a.ux_score >= 6 for c in _commands(a)))[:20]
    if commands:
        lines += ["", "## Commands and edits seen in good sessions", ""] + [
            f"- {c}" for c in commands
        ]
    pitfalls = list(dict.fromkeys(f for a in ranked for f in _failures(a)))[:10]
    low = [a for a in ranked if a.ux_score <= 5]
    if pitfalls or low:
        lines += ["", "## Pitfalls", ""] + [f"- {p}" for p in pitfalls]
        lines += [
            f"- went badly (UX {a.ux_score}/10): {' '.join(a.summary.split())[:200]}"
            for a in low[:5]
        ]
    skills = sorted({s for a in atoms for s in a.used_skills})
    if skills:
        lines += ["", f"Related skills used in these sessions: {', '.join(skills)}."]
    lines += ["", "## Sources", ""] + [f"- {a.atom_id}" for a in ranked[:30]]
    body = "\n".join(lines[:MAX_BODY_LINES])
    metadata = {
        "version": str(inp.version),
        "source_atoms": ",".join(a.atom_id for a in atoms)[:1000],
        "written_by": "xsky offline skill writer",
    }
    (work / "SKILL.md").write_text(render(inp.slug, description, body, metadata), encoding="utf-8")


# -- the model ------------------------------------------------------------------------------------


async def _model_edit(
    home: Path,
    inp: EditInput,
    atoms: list[AtomTask],
    work: Path,
    target: llm.LLMTarget,
    beat: Callable[[str], None],
) -> list[str]:
    """Let the model write the folder; returns the validator's problems at the end (empty: valid)."""
    pool = "\n".join(
        f"- {a.atom_id} (traj {a.traj_id}, view {a.offset_start}-{a.offset_end}, weight "
        f"{next((c.weightscore for c in inp.candidates if c.atom_id == a.atom_id), 0)}, UX {a.ux_score}): "
        f"{' '.join(a.intent.split())[:200]}"
        for a in atoms
    )
    current = (
        (work / "SKILL.md").read_text(encoding="utf-8")
        if (work / "SKILL.md").is_file()
        else "(none yet)"
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT.format(slug=inp.slug)},
        {
            "role": "user",
            "content": f"Skill: {inp.slug} (writing version {inp.version} on {'main' if inp.branch == 'baby' else 'staging'}).\n\n"
            f"Current SKILL.md:\n{current}\n\nCandidate atoms:\n{pool}",
        },
    ]
    client = llm.client_for(target)
    found: list[str] = []
    try:
        fixes = 0
        for turn in range(MAX_TURNS):
            response = await llm.chat(client, target, messages, _TOOLS, 0.2)
            beat(f"SkillEditAgent turn {turn + 1}")
            message = response.choices[0].message
            messages.append(llm.as_message(message))
            if not message.tool_calls:
                found = problems(work)
                if not found or fixes >= MAX_FIX_ROUNDS:
                    break
                fixes += 1
                messages.append(
                    {
                        "role": "user",
                        "content": "The folder is not valid yet:\n- "
                        + "\n- ".join(found)
                        + "\nFix it with write_file.",
                    }
                )
                continue
            for call in message.tool_calls:
                answer = _tool(home, work, inp, call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
        else:
            found = problems(work) or []
    finally:
        await client.close()
    return found


def _tool(home: Path, work: Path, inp: EditInput, name: str, raw: str | None) -> str:
    try:
        args = json.loads(raw or "{}")
        if not isinstance(args, dict):
            raise ValueError
    except ValueError:
        return f"ERROR: the arguments of {name} must be a JSON object"
    if name == "AtomTaskRead":
        candidate = next((c for c in inp.candidates if c.atom_id == args.get("atom_id")), None)
        if candidate is None:
            return f"ERROR: not a candidate atom; candidates: {', '.join(c.atom_id for c in inp.candidates)}"
        atom = read_atom(home, candidate.traj_id, candidate.atom_id)
        return (
            json.dumps(atom.model_dump(mode="json"), ensure_ascii=False)[:40_000]
            if atom
            else "ERROR: the atom file is gone"
        )
    if name == "ReadTraj":
        traj = str(args.get("traj_id", ""))
        if traj not in {c.traj_id for c in inp.candidates}:
            return "ERROR: only the trajectories of the candidate atoms can be read"
        start, end = int(args.get("offset_start") or 0), int(args.get("offset_end") or 0)
        path = md_path(home, traj)
        if not path.is_file():
            return "ERROR: the trajectory view is gone"
        text = path.read_text(encoding="utf-8", errors="replace")
        return text[max(0, start) : max(start, min(end, start + 12_000))] or "(empty range)"
    if name == "list_files":
        return (
            "\n".join(sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file()))
            or "(empty)"
        )
    if name == "validate":
        found = problems(work)
        return "valid" if not found else "problems:\n- " + "\n- ".join(found)
    path_arg = str(args.get("path", ""))
    if not WRITABLE.match(path_arg) or ".." in path_arg.split("/"):
        return "ERROR: paths are SKILL.md or under scripts/, references/ or assets/ (no '..')"
    target = work / path_arg
    if name == "read_file":
        return (
            target.read_text(encoding="utf-8", errors="replace")[:40_000]
            if target.is_file()
            else "ERROR: no such file"
        )
    if name == "write_file":
        content = args.get("content")
        if not isinstance(content, str):
            return "ERROR: content must be a string"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {path_arg} ({len(content)} characters)"
    return f"ERROR: unknown tool {name!r}"


# -- scripts ---------------------------------------------------------------------------------------


async def _run_scripts(work: Path, beat: Callable[[str], None]) -> tuple[list[str], str | None]:
    """Run every shipped script in a throwaway copy; (passed, first failure or None)."""
    scripts = (
        sorted(p for p in (work / "scripts").rglob("*") if p.is_file())
        if (work / "scripts").is_dir()
        else []
    )
    passed: list[str] = []
    for script in scripts:
        rel = str(script.relative_to(work))
        runner = RUNNERS.get(script.suffix)
        if runner is None:
            continue  # data files next to scripts are not run
        scratch = work.parent / f"run-{len(passed)}"
        shutil.copytree(work, scratch, dirs_exist_ok=True)
        # A script runs in the sandbox only: run_process uses neither the artifact store nor browsers.
        settings = load_settings()
        sandbox = sandbox_settings(worker_layers(settings))
        owner = sandbox.owner
        if owner is not None:  # the scratch copy is the script's workspace: the sandbox user's
            workspaces.make(scratch, *owner)
        # No network (no proxy), no host socket: the allow-listed sandbox sees only the copy.
        ctx = ToolContext(
            "skill-edit",
            "scripts",
            scratch,
            store=None,  # type: ignore[arg-type]
            browsers=None,  # type: ignore[arg-type]
            heartbeat=beat,
            confinement=confinement_for(settings, sandbox, scratch, "skill-edit"),
            unconfined=not sandbox.on,
        )
        proc = await run_process(ctx, [*runner, rel], SCRIPT_TIMEOUT, 64 * 1024)
        shutil.rmtree(scratch, ignore_errors=True)
        if proc.timed_out or proc.returncode != 0:
            why = "timed out" if proc.timed_out else f"exited with {proc.returncode}"
            tail = (proc.stderr.strip() or proc.stdout.strip())[-800:]
            return passed, f"shipped script {rel} {why}; nothing was committed\n{tail}".rstrip()
        passed.append(rel)
    return passed, None
