"""Each skill folder is its own git repository: ``baby`` → ``main``, and ``staging`` for a candidate.

The git CLI with plumbing, so a branch only ever moves in one step: a new version's tree
is built from a scratch folder with a private index (``write-tree``), committed with
``commit-tree`` and published with ``update-ref <branch> <new> <expected old>``. A worker
killed at any point leaves every branch either before or after, never half-written; the
edit id in the commit message lets a re-run recognise its own finished commit. The
working tree is a checkout of ``main`` (``baby`` before the first version) and is reset
after every move. No global or system git config is read (no planted hooks or aliases).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

AUTHOR = {
    "GIT_AUTHOR_NAME": "xsky",
    "GIT_AUTHOR_EMAIL": "xsky@localhost",
    "GIT_COMMITTER_NAME": "xsky",
    "GIT_COMMITTER_EMAIL": "xsky@localhost",
}
# Not part of a skill's versions: the entity's own bookkeeping next to it.
# ``.canary/``: the export canary's versions and its switch log (activities/skills/canary_export.py).
# ``.tmp-*``: those files' writes in progress (fsio.atomic_write): never shown by ``git status``
# nor removed by ``clean`` under a write; one a killed worker left is swept by :func:`sync`.
UNTRACKED = (".candidates.yml", ".ux_scores.jsonl", ".decisions.jsonl", ".canary/", ".tmp-*")
# A write in progress lasts milliseconds: a temporary this old was left by a killed worker.
STALE_TEMPORARY_SECONDS = 600


class GitError(RuntimeError):
    pass


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", **AUTHOR
    )
    env.update(extra or {})
    return env


def git(
    repo: Path,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = True,
    input_text: str | None = None,
) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "-c", "core.hooksPath=/dev/null", *args],
        capture_output=True,
        text=True,
        env=_env(env),
        input=input_text,
        timeout=60,
    )
    if check and proc.returncode != 0:
        raise GitError(
            f"git {' '.join(args[:3])} in {repo}: {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout.strip()


def is_repo(folder: Path) -> bool:
    return (folder / ".git").is_dir()


def branch_commit(repo: Path, branch: str) -> str | None:
    out = git(repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", check=False)
    return out or None


def show(repo: Path, ref: str, path: str = "SKILL.md") -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(repo), "show", f"{ref}:{path}"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    return proc.stdout if proc.returncode == 0 else None


def message(repo: Path, commit: str) -> str:
    return git(repo, "log", "-1", "--format=%B", commit)


def init(repo: Path, files: Path, msg: str) -> str:
    """A new skill repository whose first commit, on ``baby``, holds the files of ``files``."""
    repo.mkdir(parents=True, exist_ok=True)
    if not is_repo(repo):
        git(repo, "init", "-q", "--initial-branch=baby")
        _exclude_untracked(repo)
    existing = branch_commit(repo, "baby") or branch_commit(repo, "main")
    if existing:
        return existing
    commit = commit_tree(repo, files, None, msg)
    git(repo, "update-ref", "refs/heads/baby", commit, "0" * 40)
    sync(repo)
    return commit


def commit_tree(repo: Path, files: Path, parent: str | None, msg: str) -> str:
    """A commit of exactly the files in ``files`` (none of the repository's working tree)."""
    with tempfile.TemporaryDirectory() as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(repo, f"--work-tree={files}", "add", "-A", ".", env=index)
        tree = git(repo, "write-tree", env=index)
    args = ["commit-tree", tree, "-F", "-"]
    if parent:
        args[2:2] = ["-p", parent]
    return git(repo, *args, input_text=msg)


def publish(repo: Path, branch: str, commit: str, expected: str | None) -> None:
    """Move ``branch`` to ``commit`` only if it is still at ``expected`` (None: must not exist)."""
    git(
        repo,
        "update-ref",
        "-m",
        f"xsky: {branch}",
        f"refs/heads/{branch}",
        commit,
        expected or "0" * 40,
    )


def rename_baby_to_main(repo: Path) -> None:
    if branch_commit(repo, "baby") and not branch_commit(repo, "main"):
        git(repo, "branch", "-m", "baby", "main")
    sync(repo)


def delete_branch(repo: Path, branch: str, expected: str) -> None:
    git(repo, "update-ref", "-d", f"refs/heads/{branch}", expected)


def tag(repo: Path, name: str, commit: str, msg: str) -> None:
    if git(repo, "rev-parse", "-q", "--verify", f"refs/tags/{name}", check=False):
        return
    git(repo, "tag", "-a", name, commit, "-F", "-", input_text=msg)


def sync(repo: Path) -> None:
    """The working tree shows the published version: main, or baby before the first one."""
    branch = "main" if branch_commit(repo, "main") else "baby"
    if not branch_commit(repo, branch):
        return
    git(repo, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    git(repo, "reset", "-q", "--hard", branch)
    _exclude_untracked(repo)  # for repositories made before a name joined UNTRACKED
    git(repo, "clean", "-q", "-fd", *(arg for name in UNTRACKED for arg in ("-e", name)))
    _sweep_temporaries(repo)


def _exclude_untracked(repo: Path) -> None:
    """The repository's exclude file names every one of :data:`UNTRACKED` (missing ones added)."""
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text() if exclude.is_file() else ""
    missing = [name for name in UNTRACKED if name not in text.splitlines()]
    if missing:
        with exclude.open("a") as fh:
            fh.write(("\n" if text and not text.endswith("\n") else "") + "\n".join(missing) + "\n")


def _sweep_temporaries(repo: Path) -> None:
    """Remove the entity's temporaries that no write has touched for a while (a killed worker's)."""
    now = time.time()
    for tmp in repo.glob(".tmp-*"):
        try:
            if now - tmp.lstat().st_mtime > STALE_TEMPORARY_SECONDS:
                tmp.unlink()
        except FileNotFoundError:  # its write ended meanwhile
            continue


def export(repo: Path, ref: str, dest: Path) -> None:
    """The files of ``ref`` (no .git) into ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", ref],
        capture_output=True,
        env=_env(),
        timeout=60,
    )
    if archive.returncode != 0:
        raise GitError(
            f"git archive {ref} in {repo}: {archive.stderr.decode(errors='replace').strip()}"
        )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, timeout=60)


_END = "--xsky-end--"


def log(repo: Path, limit: int = 50) -> list[dict[str, str]]:
    """Commits of every branch and tag, newest first: commit, refs, date, subject, body."""
    out = git(repo, "log", "--all", f"--max-count={limit}", f"--format=%H%n%D%n%cI%n%s%n%b%n{_END}")
    entries = []
    for record in out.split(_END):
        lines = record.strip("\n").split("\n")
        if len(lines) >= 4 and len(lines[0]) >= 40:
            entries.append(
                {
                    "commit": lines[0],
                    "refs": lines[1],
                    "date": lines[2],
                    "subject": lines[3],
                    "body": "\n".join(lines[4:]).strip(),
                }
            )
    return entries


def tags(repo: Path) -> list[dict[str, str]]:
    """Annotated tags (discarded versions): name, the commit they keep, their message."""
    out = git(
        repo,
        "for-each-ref",
        "refs/tags",
        f"--format=%(refname:short)%0a%(*objectname)%0a%(contents){_END}",
    )
    result = []
    for record in out.split(_END):
        lines = record.strip("\n").split("\n")
        if len(lines) >= 2 and lines[0]:
            result.append(
                {"tag": lines[0], "object": lines[1], "message": "\n".join(lines[2:]).strip()}
            )
    return result
