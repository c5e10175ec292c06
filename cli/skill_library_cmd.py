"""``skills list|show|history|candidates|canary|promote|discard|export``: the skill library."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

import yaml
from rich.table import Table
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.skills import git as skill_git
from activities.skills.files import CANDIDATES, SCORES, published_text, skill_dir, slugs
from cli.render import cell, one_line, out, print_json, shown
from client.connect import connect_client as connect
from xsky.config import Settings, load_settings
from xsky.errors import UsageError
from xsky.safe_text import printable
from xsky.skills import canary
from xsky.skills.authoring import DRAFT_UNTIL, NEEDS_MODEL
from xsky.skills.clustering import NEW_SKILL_MIN
from xsky.skills.models import EDIT_THRESHOLD, Score, entity_workflow_id
from xsky.skills.paired import RECORD, PairedResult, kind_label
from xsky.skills.recurrence import KIND_MIN, STEPS_MIN, TEXT_MIN
from xsky.skills.spec import NAME_RE, description_of


def register(s: argparse._SubParsersAction) -> None:
    a = s.add_parser("list", help="the skills: state, version, UX score, canary")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_list)

    a = s.add_parser("show", help="a skill's SKILL.md (main by default)")
    a.add_argument("name")
    a.add_argument("--branch", choices=["main", "staging", "baby"], default=None)
    a.set_defaults(handler=cmd_show)

    a = s.add_parser("history", help="a skill's versions: its git log, promotions and discards")
    a.add_argument("name")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_history)

    a = s.add_parser("candidates", help="the atoms waiting to shape a skill's next version")
    a.add_argument("name")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_candidates)

    a = s.add_parser(
        "canary", help="a skill's canary: scores per side, the test, the decision so far"
    )
    a.add_argument("name")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_canary)

    for verb in ("promote", "discard"):
        a = s.add_parser(verb, help=f"{verb} a skill's staging version yourself (recorded in git)")
        a.add_argument("name")
        a.add_argument("--reason", default="", help="why (goes into the commit or tag message)")
        a.add_argument("--by", default="a person", help="who decided (default: a person)")
        a.set_defaults(handler=lambda x, v=verb: asyncio.run(cmd_decide(x, v)))

    from cli import skills_export_cmd

    skills_export_cmd.register(s)


def _folder(settings: Settings, name: str) -> Path:
    if not NAME_RE.match(name) or len(name) > 64:
        raise UsageError(
            f"{name!r} is not a skill name (a-z, 0-9 and hyphens); `starter.py skills list` shows them"
        )
    folder = skill_dir(settings.skills_home, name)
    if not folder.is_dir():
        known = ", ".join(slugs(settings.skills_home)) or "none yet"
        raise UsageError(f"no skill {name!r} in {folder.parent}; skills: {known}")
    return folder


def _scores(folder: Path) -> list[Score]:
    path = folder / SCORES
    if not path.is_file():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(Score.model_validate_json(line))
        except ValueError:
            continue
    return found


def _candidates(folder: Path) -> dict[str, Any]:
    path = folder / CANDIDATES
    if not path.is_file():
        return {"candidates": [], "cumulative_weightscore": 0}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise UsageError(
            f"{path} is not valid YAML ({str(e).splitlines()[0]}); it is rewritten by the skill's "
            "workflow at its next change"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("candidates", []), list):
        raise UsageError(
            f"{path} does not hold a candidates list; it is rewritten at the skill's next change"
        )
    data["candidates"] = [
        c for c in data.get("candidates", []) if isinstance(c, dict) and "atom_id" in c
    ]
    return data


def _canary(folder: Path) -> dict[str, Any]:
    main, staging = (
        skill_git.branch_commit(folder, "main"),
        skill_git.branch_commit(folder, "staging"),
    )
    scores = _scores(folder)
    m = [float(x.score) for x in scores if x.side == "main" and x.commit == main]
    st = [float(x.score) for x in scores if x.side == "staging" and x.commit == staging]
    decision = canary.decide(m, st) if staging else None
    kinds = {
        side: kind_label([x.by for x in scores if x.side == side and x.commit == commit])
        for side, commit in (("main", main), ("staging", staging))
    }
    return {
        "kind_main": kinds["main"],
        "kind_staging": kinds["staging"],
        "main": main,
        "staging": staging,
        "n_main": len(m),
        "n_staging": len(st),
        "mean_main": _mean(m),
        "mean_staging": _mean(st),
        "decision": decision.message() if decision else "no staging version",
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def draft_status(settings: Settings, pending: int) -> str:
    """Why a baby skill is still a draft (a person should know when a model is needed)."""
    from activities.llm import resolve_model

    if resolve_model(settings.skills_model, None, settings) is None:
        return f"draft — {NEEDS_MODEL}"
    return f"draft — the model writes its first version at weight {EDIT_THRESHOLD} (now {pending})"


def _status(folder: Path, state: str) -> str:
    """A published skill's state, or why it is held back (an earlier xsky's offline main)."""
    from activities.skills.files import export_refusal

    refused = export_refusal(folder) if state == "main" else None
    return f"main — {refused}" if refused else state


RECURRENCE_RULE = (
    f"a candidate skill needs the same kind of task in 2 or more sessions (request words "
    f"without ids >= {TEXT_MIN}, tool-use profile >= {STEPS_MIN}, combined >= {KIND_MIN}) and "
    f"atoms worth >= {NEW_SKILL_MIN}/10 (tuned on data: at 7 the measured corpus's one recurring "
    "workflow was dropped)"
)
ASKED = (
    "a model would be asked to write SKILL.md from the candidate's atoms (all but those held out "
    "for the paired test): a trigger description, numbered steps, exact commands, how to verify "
    "and the pitfalls of the low-scoring atoms"
)


def paired_of(folder: Path, branch: str) -> PairedResult | None:
    """The paired test committed with a branch's version (``.paired.json``), if any."""
    text = (
        skill_git.show(folder, branch, RECORD) if skill_git.branch_commit(folder, branch) else None
    )
    if not text:
        return None
    try:
        return PairedResult.model_validate_json(text)
    except ValueError:
        return None


def evidence(folder: Path, home: Path | None = None) -> str:
    """A candidate's evidence: how many tasks (atoms) of how many sessions — as the library's
    rule counts them (a session resumed or forked is one) —; `candidates` lists them (`show`
    prints the draft's SKILL.md, counts only)."""
    from xsky.skills.models import traj_of

    items = _candidates(folder).get("candidates", [])
    sessions = {_session_of(home, str(c["atom_id"])) or traj_of(str(c["atom_id"])) for c in items}
    return (
        f"{len(items)} task(s) from {len(sessions)} session(s) "
        f"(`starter.py skills candidates {folder.name}` lists them)"
    )


def _session_of(home: Path | None, atom_id: str) -> str | None:
    """The session an atom's task was typed in (its provenance), if its file is readable."""
    from xsky.skills.layout import atom_path
    from xsky.skills.models import traj_of

    if home is None:
        return None
    try:
        data = json.loads(atom_path(home, traj_of(atom_id), atom_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    session = (data.get("provenance") or {}).get("session") if isinstance(data, dict) else None
    return session if isinstance(session, str) else None


def cmd_list(args: argparse.Namespace) -> int:
    settings = load_settings()
    rows = []
    for name in slugs(settings.skills_home):
        folder = skill_dir(settings.skills_home, name)
        text, state = published_text(folder)
        repo = skill_git.is_repo(folder)
        versions = (
            len(
                [
                    e
                    for e in skill_git.log(folder)
                    if "Edit-Id:" in e["body"] or e["subject"].startswith("promote")
                ]
            )
            if repo
            else 0
        )
        c = (
            _canary(folder)
            if repo
            else {
                "n_main": 0,
                "mean_main": None,
                "n_staging": 0,
                "mean_staging": None,
                "staging": None,
                "kind_main": "no scores",
            }
        )
        tested = (
            paired_of(folder, "staging" if c["staging"] else "main" if state != "baby" else "baby")
            if repo
            else None
        )
        pending = _candidates(folder).get("cumulative_weightscore", 0)
        rows.append(
            {
                "name": name,
                "state": state,
                "draft": state == "baby",
                "status": draft_status(settings, pending)
                if state == "baby"
                else _status(folder, state),
                "versions": versions,
                "meanUx": c["mean_main"],
                "scores": c["n_main"],
                "canary": f"{c['n_staging']} vs {c['n_main']}" if c["staging"] else "",
                "pendingWeight": pending,
                "description": description_of(text or ""),
                "uxKind": c["kind_main"],
                "paired": tested.model_dump(mode="json") if tested else None,
                "pairedLine": tested.line() if tested else "no paired test yet",
                "evidence": evidence(folder, settings.skills_home) if state == "baby" else "",
                "modelWouldWrite": ASKED if state == "baby" else "",
            }
        )
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        out.print("no skills yet: they grow from atoms (`starter.py skills status`)")
        return 0
    table = Table(title=cell(f"skills in {settings.skills_home / 'skills'}"), title_justify="left")
    for col in (
        "skill",
        "state",
        "versions",
        "UX (main)",
        "canary staging vs main",
        "pending weight",
        "paired test",
        "description",
    ):
        table.add_column(col, overflow="fold")
    for r in rows:
        ux = f"{r['meanUx']} (n={r['scores']}, {r['uxKind']})" if r["meanUx"] is not None else "-"
        table.add_row(
            cell(r["name"]),
            cell(r["status"]),
            str(r["versions"]),
            cell(ux),
            cell(r["canary"] or "-"),
            cell(f"{r['pendingWeight']}/{EDIT_THRESHOLD}"),
            cell(one_line(r["pairedLine"], 90)),
            # a draft's description is a placeholder: the evidence says what it is made of
            cell(f"candidate: {r['evidence']}" if r["draft"] else one_line(r["description"], 70)),
        )
    out.print(table)
    if any(r["draft"] for r in rows):
        out.print(cell(f"for a candidate, {ASKED}"))
    out.print(cell(f"how candidates are found: {RECURRENCE_RULE}"))
    if any(r["draft"] for r in rows):
        # said whole under the table too: the state column is too narrow not to wrap it
        from activities.llm import resolve_model

        # (no model: said so, and how to give one; a model: when it writes them)
        until = (
            f"a model writes them (a draft {NEEDS_MODEL})"
            if resolve_model(settings.skills_model, None, settings) is None
            else DRAFT_UNTIL
        )
        out.print(
            f"drafts stay on the baby branch: never published, promoted or exported until {until}"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    folder = _folder(load_settings(), args.name)
    if not skill_git.is_repo(folder):
        text = (folder / "SKILL.md").read_text(encoding="utf-8")
    else:
        branch = args.branch or ("main" if skill_git.branch_commit(folder, "main") else "baby")
        committed = skill_git.show(folder, branch)
        if committed is None:
            have = [b for b in ("main", "staging", "baby") if skill_git.branch_commit(folder, b)]
            raise UsageError(f"{args.name} has no {branch} branch; it has: {', '.join(have)}")
        text = committed
    # A model wrote it from transcripts: every control character shown, nothing else changed.
    text = printable(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if skill_git.is_repo(folder):
        tested = paired_of(folder, branch)
        if tested is not None:  # the version's evidence, committed with it
            sys.stdout.write(f"\n-- {branch}: {printable(tested.line())}\n")
            for t in tested.trials:
                sys.stdout.write(
                    f"   trial on {t.task}: with {t.with_score}, baseline {t.baseline_score} "
                    f"(model-judged, shown first: {t.shown_first})\n"
                )
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    folder = _folder(load_settings(), args.name)
    if not skill_git.is_repo(folder):
        raise UsageError(f"{args.name} is a hand-written folder without git history")
    entries, tags = skill_git.log(folder), skill_git.tags(folder)
    if args.json:
        print_json({"commits": entries, "tags": tags})
        return 0
    for e in entries:
        refs = f" ({e['refs']})" if e["refs"] else ""
        out.print(
            f"[yellow]{shown(e['commit'][:10])}[/]{shown(refs)} {shown(e['date'][:19])}  [bold]{shown(e['subject'])}[/]"
        )
        for line in e["body"].splitlines()[:6]:
            out.print(cell(f"    {line}"))
    for t in tags:
        message = t["message"].splitlines()[0] if t["message"] else ""
        out.print(f"[red]{shown(t['tag'])}[/] → {shown(t['object'][:10])}: {shown(message)}")
    return 0


def cmd_candidates(args: argparse.Namespace) -> int:
    data = _candidates(_folder(load_settings(), args.name))
    if args.json:
        print_json(data)
        return 0
    items = data.get("candidates", [])
    table = Table(
        title=cell(
            f"{args.name}: cumulative weightscore {data.get('cumulative_weightscore', 0)} (SkillEditAgent runs at 10)"
        ),
        title_justify="left",
    )
    for col in ("atom", "weight", "status", "by", "reason"):
        table.add_column(col, overflow="fold")
    for c in items:
        # .candidates.yml is written by the skill's workflow from models' decisions: literal text
        table.add_row(
            cell(c["atom_id"]),
            cell(c.get("weightscore", "?")),
            cell(
                str(c.get("status", "pending")) + (f" {c['commit'][:8]}" if c.get("commit") else "")
            ),
            cell(c.get("by", "")),
            cell(one_line(str(c.get("reason", "")), 80)),
        )
    out.print(table)
    return 0


def cmd_canary(args: argparse.Namespace) -> int:
    folder = _folder(load_settings(), args.name)
    facts: dict[str, Any] = (
        _canary(folder)
        if skill_git.is_repo(folder)
        else {"staging": None, "decision": "not a versioned skill"}
    )
    facts["rule"] = (
        f"at least {canary.MIN_SCORES} scores on each side; a Mann-Whitney test of staging + {canary.MARGIN} "
        f"against main at alpha {canary.ALPHA}: promote when staging is shown not worse by more than "
        f"{canary.MARGIN}, discard when shown worse, else keep collecting; discard after "
        f"{canary.MAX_AGE.days} days without a decision; assignment sticky, p = {canary.P_STAGING}"
    )
    if args.json:
        print_json(
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in facts.items()}
        )
        return 0
    if not facts.get("staging"):
        out.print(f"{args.name}: no staging version under canary. Rule: {facts['rule']}")
        return 0
    out.print(f"[bold]{args.name}[/] main {facts['main'][:10]} vs staging {facts['staging'][:10]}")
    out.print(f"  main:    n={facts['n_main']}, mean {facts['mean_main']} ({facts['kind_main']})")
    out.print(
        f"  staging: n={facts['n_staging']}, mean {facts['mean_staging']} ({facts['kind_staging']})"
    )
    tested = paired_of(folder, "staging")
    out.print(
        cell(f"  {tested.line() if tested else 'no paired test: never promoted by the canary'}")
    )
    out.print(cell(f"  {facts['decision']}"))
    out.print(f"  rule: {facts['rule']}")
    return 0


async def cmd_decide(args: argparse.Namespace, verb: str) -> int:
    from xsky.skills.models import CanaryVerdict

    settings = load_settings()
    folder = _folder(settings, args.name)
    if not skill_git.branch_commit(folder, "staging"):
        if published_text(folder)[1] == "baby":  # a draft: nothing was written to decide on
            raise UsageError(
                f"{args.name} is a draft: it has no version to {verb} until a model writes its "
                "SKILL.md (configure XSKY_SKILLS_MODEL, or XSKY_MODEL, on the skills worker; "
                f"`starter.py skills candidates {args.name}` lists what it is made of)"
            )
        raise UsageError(f"{args.name} has no staging version to {verb}")
    client = await connect(settings)
    handle = client.get_workflow_handle(entity_workflow_id(settings.task_queue, args.name))
    try:
        said = await handle.execute_update(
            "decide",
            CanaryVerdict(verdict=verb, by=args.by, reason=args.reason),  # type: ignore[arg-type]
            result_type=str,
        )
    except WorkflowUpdateFailedError as e:
        cause = e.cause.message if isinstance(e.cause, ApplicationError) else str(e.cause)
        raise UsageError(f"{verb} refused: {cause}") from None
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            raise UsageError(
                f"the entity workflow of {args.name} is not running; start a worker (`starter.py up`)"
            ) from None
        raise
    out.print(cell(f"{verb}d {args.name}: {said}"))
    return 0
