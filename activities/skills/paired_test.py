"""The paired test's side effects: run held-out tasks with and without a skill version, have a
blind comparator score the two outputs, and commit the result on the version's branch.

The agent of a trial is the configured model (``XSKY_SKILLS_MODEL``, else ``XSKY_MODEL``)
given the task — a held-out atom's intent — with the version's SKILL.md loaded in its system
prompt, or with the baseline's (``main``'s; none for a first version). It answers in one
model call: what it would do, the commands and the result (no tools run: a trial must not
touch the person's machine). The comparator is another call that sees the task and the two
outputs as "answer 1" and "answer 2", in an order drawn per trial
(:func:`xsky.skills.paired.first_shown`), never told which had the skill, and scores each
1–10. The statistics and verdict are :mod:`xsky.skills.paired`.

The result is committed as ``.paired.json`` on top of the version (a ``Paired-Of: <version>``
trailer makes a retried activity find its own commit), so the version that is promoted or
kept under canary carries its evidence in git. Without a model nothing is judged: the
record says the test did not run, and such a version is never promoted.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from activities import llm
from activities.skills import git as skill_git
from activities.skills.files import read_atom, skill_dir
from xsky.skills.models import PairedInput
from xsky.skills.paired import (
    RECORD,
    PairedResult,
    Trial,
    first_shown,
    not_run,
    summarise,
    tasks,
)

AGENT_SYSTEM = (
    "You are a coding agent. Do the task you are given as well as you can: say what you do, the "
    "exact commands you would run, how you verify it, and the result."
)
SKILL_LOADED = "\n\nThis skill is loaded for the task; follow it where it applies:\n\n"
COMPARATOR_SYSTEM = (
    "You judge two answers to the same coding task, blind. Score each from 1 (useless) to 10 "
    "(complete, correct, verified) for how well it does the task. Reply with JSON only: "
    '{"score_1": <1-10>, "score_2": <1-10>}'
)
_JSON = re.compile(r"\{[^{}]*\}")


def trailer(commit: str) -> str:
    return f"Paired-Of: {commit}"


async def paired_test(home: Path, inp: PairedInput, target: llm.LLMTarget | None) -> PairedResult:
    repo = skill_dir(home, inp.slug)
    baseline = f"main {inp.baseline[:10]}" if inp.baseline else "no skill"
    tip = skill_git.branch_commit(repo, inp.branch)
    if tip and tip != inp.commit and trailer(inp.commit) in skill_git.message(repo, tip):
        done = skill_git.show(repo, tip, RECORD)  # a retry: the test ran and was committed
        if done:
            return PairedResult.model_validate_json(done).model_copy(update={"record_commit": tip})
    if tip != inp.commit:
        return not_run(inp.commit, baseline, f"{inp.branch} moved since the version was written")
    if target is None:
        result = not_run(
            inp.commit,
            baseline,
            "no model is configured (XSKY_SKILLS_MODEL): the paired test cannot run, and a "
            "version is never published or promoted without it",
        )
        return _commit(home, inp, result)
    atoms = {
        a.atom_id: a
        for r in inp.held_out
        if (a := read_atom(home, r.traj_id, r.atom_id)) is not None
    }
    if not atoms:
        result = not_run(
            inp.commit,
            baseline,
            "no held-out atom to take a task from (the version was written from every atom)",
            target.model,
        )
        return _commit(home, inp, result)
    version = skill_git.show(repo, inp.commit) or ""
    base = skill_git.show(repo, inp.baseline) if inp.baseline else None
    trials: list[Trial] = []
    async with llm.client_for(target) as client:
        for n, aid in enumerate(tasks(list(atoms))):
            task = atoms[aid].intent
            with_skill = await _answer(client, target, task, version)
            without = await _answer(client, target, task, base)
            order = first_shown(inp.commit, n)
            first, second = (with_skill, without) if order == "with" else (without, with_skill)
            scores = await _judge(client, target, task, first, second)
            if scores is None:
                continue  # an unreadable verdict judges nothing; fewer than 3 is "not run"
            s_with, s_base = scores if order == "with" else (scores[1], scores[0])
            trials.append(
                Trial(task=aid, shown_first=order, with_score=s_with, baseline_score=s_base)
            )
    result = summarise(trials, inp.commit, baseline, target.model, list(atoms))
    return _commit(home, inp, result)


async def _answer(client: Any, target: llm.LLMTarget, task: str, skill: str | None) -> str:
    system = AGENT_SYSTEM + (SKILL_LOADED + skill if skill else "")
    response = await llm.chat(
        client,
        target,
        [{"role": "system", "content": system}, {"role": "user", "content": task}],
    )
    return (response.choices[0].message.content or "").strip()


async def _judge(
    client: Any, target: llm.LLMTarget, task: str, first: str, second: str
) -> tuple[int, int] | None:
    response = await llm.chat(
        client,
        target,
        [
            {"role": "system", "content": COMPARATOR_SYSTEM},
            {
                "role": "user",
                "content": f"The task:\n{task}\n\nAnswer 1:\n{first}\n\nAnswer 2:\n{second}",
            },
        ],
        temperature=0,
    )
    return parse_scores(response.choices[0].message.content or "")


def parse_scores(text: str) -> tuple[int, int] | None:
    """``(score_1, score_2)`` from the comparator's reply, or None when it holds no valid pair."""
    for match in _JSON.finditer(text):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        a, b = data.get("score_1"), data.get("score_2")
        if isinstance(a, int) and isinstance(b, int) and 1 <= a <= 10 and 1 <= b <= 10:
            return a, b
    return None


def _commit(home: Path, inp: PairedInput, result: PairedResult) -> PairedResult:
    """``.paired.json`` committed on the version's branch, on top of the version."""
    repo = skill_dir(home, inp.slug)
    work = home / ".staging" / "paired" / inp.slug
    if work.exists():
        shutil.rmtree(work)
    skill_git.export(repo, inp.commit, work)
    (work / RECORD).write_text(result.model_dump_json(indent=1) + "\n", encoding="utf-8")
    message = f"paired test: {result.line()}\n\n{trailer(inp.commit)}\n"
    commit = skill_git.commit_tree(repo, work, inp.commit, message)
    skill_git.publish(repo, inp.branch, commit, inp.commit)
    skill_git.sync(repo)
    shutil.rmtree(work, ignore_errors=True)
    return result.model_copy(update={"record_commit": commit})
