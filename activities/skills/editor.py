"""SkillEditAgent: a skill's pending candidates → a new version of its folder, checked, committed.

The editor works in a scratch copy of the skill's current version (``baby`` or ``main``):

- with a model, :mod:`activities.skills.edit_agent` writes the folder, held to the Agent
  Skills authoring rules;
- without one, nothing is published: a baby skill gets a *draft* on ``baby``
  (:func:`xsky.skills.authoring.draft_skill_md`, labelled as one, never renamed ``main``),
  a published skill gets nothing, and the candidates stay pending for the model's edit.

Nothing is committed unless the folder passes :func:`xsky.skills.spec.problems` (the
reference validator, our stricter rules and the authoring rules, with the candidates'
prompts it must not quote and the recording machine's homes it must not name) and every
script under ``scripts/`` runs to exit 0 in a scrubbed, time-limited process group. Then
``commit_baby_to_main`` (the first version: the commit on ``baby``, which is renamed
``main``) or ``commit_to_staging`` (a ``staging`` branch off ``main``), by plumbing with the
expected old ref, so a killed worker leaves no half-written commit and the re-run finds its
own by ``Edit-Id``.

Results travel into the entity's history: they name files and problems, never the text of
a transcript or of a script's output (that is kept in ``skills/.edit-errors/<slug>.txt``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from activities import llm
from activities.sandbox import workspace as workspaces
from activities.sandbox.confine import confinement_for, sandbox_settings
from activities.skills import git as skill_git
from activities.skills.edit_agent import checker, model_edit
from activities.skills.files import read_atom, skill_dir
from activities.tools import ToolContext
from activities.tools.shell import run_process
from xsky.config import load_settings
from xsky.settings_files import worker_layers
from xsky.skills.atoms import AtomTask
from xsky.skills.authoring import NEEDS_MODEL, draft_skill_md
from xsky.skills.models import AtomRef, EditInput, EditResult, traj_of
from xsky.skills.paired import RECORD as PAIRED_RECORD
from xsky.skills.paired import hold_out
from xsky.skills.rules import machine_homes

SCRIPT_TIMEOUT = 60.0
RUNNERS = {".sh": ["bash"], ".py": ["python3"]}
DRAFT_MARK = "Draft: written offline, not published"
ERRORS = ".edit-errors"  # skills/.edit-errors/<slug>.txt: a failed script's output
HELD_OUT = "Held-Out: "


def edit_message(
    inp: EditInput, by: str, kind: str, draft: bool = False, held: list[AtomRef] | None = None
) -> str:
    atoms = ", ".join(c.atom_id for c in inp.candidates)
    # as `skills candidates` and `list` count it: the founding atom's weight is not counted
    weight = str(sum(c.weightscore for c in inp.candidates if not c.founding))
    founders = [c for c in inp.candidates if c.founding]
    if founders:
        weight += f", the founding atom's {founders[0].weightscore} not counted"
    mark = f"{DRAFT_MARK}\n" if draft else ""
    # the paired test's tasks: kept out of what the model saw
    out = f"{HELD_OUT}{', '.join(r.atom_id for r in held)}\n" if held else ""
    return (
        f"{kind}: {inp.slug} v{inp.version} from {len(inp.candidates)} atoms (cumulative weightscore {weight})\n\n"
        f"Atoms: {atoms}\n{out}Written by: {by}\n{mark}\nEdit-Id: {inp.edit_id}\n"
    )


def held_out_of(message: str) -> list[AtomRef]:
    """The atoms an edit held out for the paired test, from its commit message."""
    line = next((x for x in message.splitlines() if x.startswith(HELD_OUT)), "")
    ids = [a.strip() for a in line[len(HELD_OUT) :].split(",") if a.strip()]
    return [AtomRef(traj_id=traj_of(a), atom_id=a) for a in ids]


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
    # the base's paired-test record says nothing of the new version: it never inherits it
    (work / PAIRED_RECORD).unlink(missing_ok=True)
    atoms = [a for c in inp.candidates if (a := read_atom(home, c.traj_id, c.atom_id)) is not None]
    if not atoms:
        return EditResult(ok=False, message="none of the candidate atoms could be read")
    prompts, homes = [a.intent for a in atoms], _homes(atoms)
    if target is None:
        return _draft(repo, inp, atoms, work, checker(prompts, homes))
    held: list[AtomRef] = []
    if inp.paired:  # the paired test's tasks are atoms the model does not see
        written, out = hold_out([a.atom_id for a in atoms])
        held = [AtomRef(traj_id=a.traj_id, atom_id=a.atom_id) for a in atoms if a.atom_id in out]
        atoms = [a for a in atoms if a.atom_id in written]
    found = await model_edit(home, inp, atoms, work, target, beat, checker(prompts, homes, True))
    by = f"model {target.model}"
    if found:
        return EditResult(
            ok=False,
            message="the new version does not meet the Agent Skills specification",
            problems=found,
            by=by,
        )
    passed, failure, output = await _run_scripts(work, beat)
    if failure:
        log = repo.parent / ERRORS / f"{inp.slug}.txt"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(output, encoding="utf-8")
        return EditResult(
            ok=False,
            message=f"{failure} (its output: skills/{ERRORS}/{inp.slug}.txt)",
            scripts=passed,
            by=by,
        )
    files = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
    if inp.branch == "baby":
        tip = skill_git.branch_commit(repo, "baby")
        commit = skill_git.commit_tree(
            repo, work, tip, edit_message(inp, by, "commit_baby_to_main", held=held)
        )
        skill_git.publish(repo, "baby", commit, tip)
        branch = "baby"
        if not inp.paired:  # else main only once its paired test beats no skill
            skill_git.rename_baby_to_main(repo)
            branch = "main"
    else:
        commit = skill_git.commit_tree(
            repo, work, inp.base_commit, edit_message(inp, by, "commit_to_staging", held=held)
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
        held_out=held,
    )


def _already_committed(repo: Path, inp: EditInput) -> EditResult | None:
    """A re-run after a kill between the commit and the reply finds its own commit."""
    for branch in ("main", "staging", "baby"):
        tip = skill_git.branch_commit(repo, branch)
        message = skill_git.message(repo, tip) if tip else ""
        if tip and f"Edit-Id: {inp.edit_id}" in message:
            if branch == "baby" and DRAFT_MARK in message:
                return EditResult(
                    ok=True, draft=True, commit=tip, branch="baby", message=_draft_note(inp, tip)
                )
            if branch == "baby" and not inp.paired:
                skill_git.rename_baby_to_main(repo)
                branch = "main"
            return EditResult(
                ok=True,
                commit=tip,
                branch=branch,
                message=f"{inp.slug}: {branch} {tip[:10]} (already committed)",
                held_out=held_out_of(message),
            )
    return None


def _homes(atoms: list[AtomTask]) -> list[str]:
    """The recording machine's homes: this worker's, and those the atoms' raw paths show."""
    raw = [r.path for a in atoms for r in a.provenance.raw]
    return list(dict.fromkeys([str(Path.home()), *machine_homes(raw)]))


def _draft_note(inp: EditInput, commit: str | None) -> str:
    where = f"a draft on baby {commit[:10]}" if commit else "no new version"
    return f"{inp.slug}: {where} ({NEEDS_MODEL})"


def _draft(
    repo: Path,
    inp: EditInput,
    atoms: list[AtomTask],
    work: Path,
    check: Callable[[Path], list[str]],
) -> EditResult:
    """No model: a baby skill's draft is refreshed on baby; a published skill is left as it is."""
    if inp.branch != "baby":
        shutil.rmtree(work.parent, ignore_errors=True)
        return EditResult(ok=True, draft=True, message=_draft_note(inp, None))
    for extra in ("scripts", "references", "assets"):
        shutil.rmtree(work / extra, ignore_errors=True)
    (work / "SKILL.md").write_text(draft_skill_md(inp.slug, atoms, inp.version), encoding="utf-8")
    found = check(work)
    if found:  # a draft is made of counts and the name only: this is a bug, said as one
        return EditResult(
            ok=False, message="the offline draft does not pass the validator", problems=found
        )
    tip = skill_git.branch_commit(repo, "baby")
    commit = skill_git.commit_tree(
        repo, work, tip, edit_message(inp, "offline", "draft_on_baby", draft=True)
    )
    skill_git.publish(repo, "baby", commit, tip)
    skill_git.sync(repo)
    shutil.rmtree(work.parent, ignore_errors=True)
    return EditResult(
        ok=True, draft=True, commit=commit, branch="baby", message=_draft_note(inp, commit)
    )


# -- scripts ---------------------------------------------------------------------------------------


async def _run_scripts(
    work: Path, beat: Callable[[str], None]
) -> tuple[list[str], str | None, str]:
    """Run every shipped script in a throwaway copy; (passed, first failure or None, its output)."""
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
            return passed, f"shipped script {rel} {why}; nothing was committed", tail
        passed.append(rel)
    return passed, None, ""
