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
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel

from activities import llm
from activities.model_tools import ModelTool, tool_loop
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


class AtomTaskRead(BaseModel):
    """Read one candidate atom (all fields)."""

    atom_id: str


class ReadTraj(BaseModel):
    """Read a slice of a trajectory's .md view by character offsets."""

    traj_id: str
    offset_start: int
    offset_end: int


def _inside(path: str) -> str:
    if not WRITABLE.match(path) or ".." in path.split("/"):
        raise ValueError("paths are SKILL.md or under scripts/, references/ or assets/ (no '..')")
    return path


SkillPath = Annotated[str, AfterValidator(_inside)]


class ReadFile(BaseModel):
    """Read a file of the skill folder."""

    path: SkillPath


class WriteFile(BaseModel):
    """Write a file of the skill folder (SKILL.md, scripts/…, references/…, assets/…)."""

    path: SkillPath
    content: str


class ListFiles(BaseModel):
    """The files of the skill folder being edited."""


class Validate(BaseModel):
    """Check the folder against the Agent Skills specification."""


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
    folder = _Folder(home, work, inp)
    async with llm.client_for(target) as client:
        await tool_loop(
            client,
            target,
            messages,
            folder.tools(),
            max_turns=MAX_TURNS,
            beat=lambda turn: beat(f"SkillEditAgent turn {turn}"),
            nudge=folder.fix_request,
            temperature=0.2,
        )
    return problems(work)


class _Folder:
    """The tools of one edit: the candidates and their trajectories, read-only; the skill folder."""

    def __init__(self, home: Path, work: Path, inp: EditInput) -> None:
        self.home, self.work, self.inp = home, work, inp
        self.fixes = 0

    def tools(self) -> list[ModelTool[Any]]:
        return [
            ModelTool.of("AtomTaskRead", AtomTaskRead, self.read_atom),
            ModelTool.of("ReadTraj", ReadTraj, self.read_traj),
            ModelTool.of("list_files", ListFiles, self.list_files),
            ModelTool.of("read_file", ReadFile, self.read_file),
            ModelTool.of("write_file", WriteFile, self.write_file),
            ModelTool.of("validate", Validate, self.validate),
        ]

    def fix_request(self) -> str | None:
        """When the model has finished: ask for fixes while the folder is invalid (bounded)."""
        found = problems(self.work)
        if not found or self.fixes >= MAX_FIX_ROUNDS:
            return None
        self.fixes += 1
        return "The folder is not valid yet:\n- " + "\n- ".join(found) + "\nFix it with write_file."

    def read_atom(self, a: AtomTaskRead) -> str:
        candidates = self.inp.candidates
        candidate = next((c for c in candidates if c.atom_id == a.atom_id), None)
        if candidate is None:
            return f"ERROR: not a candidate atom; candidates: {', '.join(c.atom_id for c in candidates)}"
        atom = read_atom(self.home, candidate.traj_id, candidate.atom_id)
        return (
            json.dumps(atom.model_dump(mode="json"), ensure_ascii=False)[:40_000]
            if atom
            else "ERROR: the atom file is gone"
        )

    def read_traj(self, a: ReadTraj) -> str:
        if a.traj_id not in {c.traj_id for c in self.inp.candidates}:
            return "ERROR: only the trajectories of the candidate atoms can be read"
        path = md_path(self.home, a.traj_id)
        if not path.is_file():
            return "ERROR: the trajectory view is gone"
        text = path.read_text(encoding="utf-8", errors="replace")
        start, end = a.offset_start, a.offset_end
        return text[max(0, start) : max(start, min(end, start + 12_000))] or "(empty range)"

    def list_files(self, _: ListFiles) -> str:
        files = sorted(str(p.relative_to(self.work)) for p in self.work.rglob("*") if p.is_file())
        return "\n".join(files) or "(empty)"

    def validate(self, _: Validate) -> str:
        found = problems(self.work)
        return "valid" if not found else "problems:\n- " + "\n- ".join(found)

    def read_file(self, a: ReadFile) -> str:
        target = self.work / a.path
        if not target.is_file():
            return "ERROR: no such file"
        return target.read_text(encoding="utf-8", errors="replace")[:40_000]

    def write_file(self, a: WriteFile) -> str:
        target = self.work / a.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(a.content, encoding="utf-8")
        return f"wrote {a.path} ({len(a.content)} characters)"


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
