"""``skills export``: each skill's exported folder, and the log of which version it showed when.

Without ``--canary`` the folder is a managed copy of ``main`` (as before). With ``--canary``
it is a **symlink** into the skill's own ``.canary/<side>-<commit>/<name>/`` (a validated
copy of that version, made once), switched between main and staging per window of
:mod:`xsky.skills.canary_window`; where a symlink cannot be made (a file system or OS
without them) it is a managed copy, replaced as a whole at each switch. Either way the
switch is recorded in ``<skill>/.canary/switches.jsonl`` (time, side, commit, folder): the
sessions of tools that only read that folder are scored on the side of the switch in force
at the moment they used the skill (:mod:`activities.skills.canary_use`).

Switching a symlink is one ``rename`` over the old one, so a reader sees the old version
or the new one, never a half-written folder. The record is appended after the switch
succeeded; a crash between the two is repaired at the next run, which records what the
folder actually shows whenever the log's last line for that folder says otherwise.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from activities.skills import git as skill_git
from activities.skills.files import export_refusal
from xsky.skills import canary_window as cw
from xsky.skills.paired import RECORD as PAIRED_RECORD
from xsky.skills.spec import problems

EXPORT_MARK = ".xsky-export"  # in every exported folder: only these are ever replaced
CANARY_DIR = ".canary"
SWITCHES = "switches.jsonl"
KEEP_OLD_VERSIONS = timedelta(days=2)  # a session may still run an old version's scripts


@dataclass
class Placed:
    """What one skill's exported folder shows after this run."""

    name: str
    side: cw.Side | None = None
    commit: str | None = None
    how: str = ""  # "symlink" | "canary-copy" (no symlinks here) | "copy" (plain export)
    switched: bool = False
    skipped: str | None = None  # why nothing was exported


def switches_path(folder: Path) -> Path:
    return folder / CANARY_DIR / SWITCHES


def read_switches(folder: Path) -> list[cw.Switch]:
    path = switches_path(folder)
    if not path.is_file():
        return []
    return cw.parse_switches(path.read_text(encoding="utf-8", errors="replace"))


def record(folder: Path, switch: cw.Switch) -> None:
    """Append one line (O_APPEND: concurrent exporters never interleave inside a line)."""
    path = switches_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, switch.line().encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def wanted(name: str, main: str, staging: str | None, canary: bool, now: datetime) -> cw.Switch:
    """The side and commit the folder should show now (``to`` and ``at`` filled in later)."""
    if not canary or not staging:
        return cw.Switch(at="", side="main", commit=main, to="", staging=staging)
    index = cw.window_of(now)
    side = cw.planned_side(name, staging, index)
    return cw.Switch(
        at="",
        side=side,
        commit=staging if side == "staging" else main,
        to="",
        window=index,
        staging=staging,
    )


def export_skill(
    folder: Path, name: str, dest: Path, canary: bool, now: datetime | None = None
) -> Placed:
    """Place ``dest/name`` for one versioned skill (a git repository in the library)."""
    now = now or datetime.now(UTC)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / name
    main = skill_git.branch_commit(folder, "main")
    refused = export_refusal(folder)
    if refused or not main:
        # a draft never leaves the library, nor an offline main: say why, and what would help
        return Placed(name, skipped=refused or "a draft on baby, not a skill yet")
    if _foreign(target):
        return Placed(name, skipped=f"{target} exists and was not exported by xsky; left alone")
    staging = skill_git.branch_commit(folder, "staging")
    plan = wanted(name, main, staging, canary, now)
    found = _version(folder, name, plan.side, plan.commit)
    if isinstance(found, list):
        return Placed(name, skipped=f"not spec-valid ({'; '.join(found)})")
    current = installed(target)
    how = _kind(target)
    # a plain export's copy becomes a link under --canary, a link becomes a copy without it
    switched = current != (plan.side, plan.commit) or (how == "copy") == canary
    if switched:
        if canary:
            how = _link(found, target)
        else:
            how = "copy"
            _copy(found, target, f"{name} {plan.side} {plan.commit}\n")
    # the record in force at ``now`` for this folder, not the last one written: an export
    # run for an earlier moment (a clock set back, a replayed cron) must still log its side,
    # or the sessions of that window would be read as "before the log" and scored on main
    mine = [s for s in read_switches(folder) if s.to == str(target)]
    last = cw.installed_at(mine, now)
    if switched or last is None or (last.side, last.commit) != (plan.side, plan.commit):
        # ``now`` was taken just before the switch: a session that read the folder after it
        # is on the new side (the switch itself takes milliseconds)
        record(
            folder,
            cw.Switch(
                at=_iso(now),
                side=plan.side,
                commit=plan.commit,
                to=str(target),
                how="symlink" if how == "symlink" else "copy",
                window=plan.window,
                staging=plan.staging,
            ),
        )
        switched = True
    _prune(folder, {c for c in (main, staging, plan.commit) if c})
    return Placed(name, plan.side, plan.commit, how, switched)


def export_plain(folder: Path, name: str, dest: Path) -> Placed:
    """A hand-written skill (a plain folder, no git): copied as it is, nothing recorded."""
    target = dest / name
    if _foreign(target):
        return Placed(name, skipped=f"{target} exists and was not exported by xsky; left alone")
    scratch = dest / f".{name}.export"
    shutil.rmtree(scratch, ignore_errors=True)
    # links copied as links, then refused: copied as files they would put what they point to
    # (a file outside the skill, perhaps a secret) into the agent's skills folder
    shutil.copytree(folder, scratch, symlinks=True, ignore=shutil.ignore_patterns(".*"))
    links = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if p.is_symlink())
    if links:
        shutil.rmtree(scratch, ignore_errors=True)
        return Placed(
            name,
            skipped=f"it holds links ({', '.join(links[:5])}): a skill is exported as files of "
            "its own; copy what they point to into the skill's folder",
        )
    found = problems(scratch) if scratch.name == name else check_as(scratch, name)
    if found:
        shutil.rmtree(scratch, ignore_errors=True)
        return Placed(name, skipped=f"not spec-valid ({'; '.join(found)})")
    (scratch / EXPORT_MARK).write_text(f"{name} hand-written\n")
    _remove(target)
    scratch.rename(target)
    return Placed(name, "main", "hand-written", "copy", True)


def installed(target: Path) -> tuple[str, str] | None:
    """(side, commit) the exported folder shows now, from its mark (None: nothing of ours)."""
    mark = target / EXPORT_MARK
    try:
        words = mark.read_text(encoding="utf-8").split()
    except OSError:
        return None
    if len(words) >= 3 and words[1] in ("main", "staging"):
        return words[1], words[2]
    if len(words) == 2:  # exported before the canary: "<name> <main commit>"
        return "main", words[1]
    return None


def check_as(scratch: Path, name: str) -> list[str]:
    """Validate a copy as if it were in a folder of its own name (the spec ties the two)."""
    probe = scratch.parent / f".check-{name}" / name
    shutil.rmtree(probe.parent, ignore_errors=True)
    shutil.copytree(scratch, probe)
    try:
        return problems(probe)
    finally:
        shutil.rmtree(probe.parent, ignore_errors=True)


# -- the pieces --------------------------------------------------------------------------------


def _version(folder: Path, name: str, side: str, commit: str) -> Path | list[str]:
    """``<skill>/.canary/<side>-<commit>/<name>/``: the files of that commit, validated, with the
    mark that says which side and commit they are (made once; a version never changes)."""
    home = folder / CANARY_DIR / f"{side}-{commit}"
    done = home / name
    if (done / EXPORT_MARK).is_file():
        return done
    scratch = folder / CANARY_DIR / f".{side}-{commit}.{os.getpid()}" / name
    shutil.rmtree(scratch.parent, ignore_errors=True)
    skill_git.export(folder, commit, scratch)
    # the paired test's record is the library's evidence about the version, not part of the skill
    (scratch / PAIRED_RECORD).unlink(missing_ok=True)
    found = problems(scratch)
    if found:
        shutil.rmtree(scratch.parent, ignore_errors=True)
        return found
    (scratch / EXPORT_MARK).write_text(f"{name} {side} {commit}\n")
    home.mkdir(parents=True, exist_ok=True)
    try:
        scratch.rename(done)
    except OSError:  # another exporter made it meanwhile: theirs is the same files
        if not (done / EXPORT_MARK).is_file():
            raise
    shutil.rmtree(scratch.parent, ignore_errors=True)
    return done


def _link(version: Path, target: Path) -> str:
    """Point ``target`` at ``version`` in one rename; a managed copy where symlinks fail."""
    tmp = target.parent / f".{target.name}.link"
    try:
        if tmp.is_symlink() or tmp.exists():
            _remove(tmp)
        os.symlink(version.resolve(), tmp, target_is_directory=True)
    except OSError:  # no symlinks here (a filesystem or a Windows account without them)
        # marked "canary": the next run keeps it a copy instead of trying the link again
        mark = (version / EXPORT_MARK).read_text(encoding="utf-8").strip()
        _copy(version, target, f"{mark} canary\n")
        return "canary-copy"
    if target.is_symlink() or not target.exists():
        os.replace(tmp, target)  # atomic: a reader sees the old version or the new one
    else:  # a managed copy from a plain export: it goes, then the link takes its place
        _remove(target)
        os.replace(tmp, target)
    return "symlink"


def _copy(version: Path, target: Path, mark: str) -> None:
    scratch = target.parent / f".{target.name}.export"
    _remove(scratch)
    shutil.copytree(version, scratch, ignore=shutil.ignore_patterns(EXPORT_MARK))
    (scratch / EXPORT_MARK).write_text(mark)
    _remove(target)
    scratch.rename(target)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _foreign(target: Path) -> bool:
    """Something at ``target`` that xsky did not put there (never replaced)."""
    if target.is_symlink():  # ours points into a skill's .canary/ (even once that version went)
        return f"/{CANARY_DIR}/" not in os.readlink(target)
    return target.exists() and installed(target) is None


def _kind(target: Path) -> str:
    """``symlink``, ``canary-copy`` (a managed copy where links failed) or ``copy`` (plain)."""
    if target.is_symlink():
        return "symlink"
    try:
        words = (target / EXPORT_MARK).read_text(encoding="utf-8").split()
    except OSError:
        return "copy"
    return "canary-copy" if words[-1:] == ["canary"] else "copy"


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="milliseconds")


def _prune(folder: Path, keep: set[str]) -> None:
    """Versions that are neither main nor staging any more go after :data:`KEEP_OLD_VERSIONS`."""
    root = folder / CANARY_DIR
    if not root.is_dir():
        return
    cutoff = time.time() - KEEP_OLD_VERSIONS.total_seconds()
    for p in root.iterdir():
        if not p.is_dir() or "-" not in p.name or p.name.startswith("."):
            continue
        commit = p.name.split("-", 1)[1]
        if commit not in keep and p.stat().st_mtime < cutoff:
            shutil.rmtree(p, ignore_errors=True)
