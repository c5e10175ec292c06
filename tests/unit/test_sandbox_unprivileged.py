"""The sandbox judged by effect: never root on the host, only an allow-list in view, nothing
planted in git that runs later. Each attack is harmless if it works: a kernel setting is
written with its own current value, canaries live in temp folders and are only read.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.sandbox import bwrap, git_guard
from activities.sandbox.bwrap import Confinement
from activities.sandbox.workspace import make
from activities.tools import ToolContext
from activities.tools.shell import shell

pytestmark = pytest.mark.skipif(
    bwrap.ready() is not None, reason=f"no OS sandbox here: {bwrap.ready()}"
)


def context(ws: Path, **confinement: object) -> ToolContext:
    return ToolContext(
        "run-1",
        "1",
        ws,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        lambda note: None,
        confinement=Confinement(workspace=ws, **confinement),  # type: ignore[arg-type]
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    who = bwrap.identity()
    folder = tmp_path / "workspace"
    folder.mkdir()
    return make(folder, *((who.uid, who.gid) if who.drop else (None, None)))


async def run(ws: Path, command: str, **confinement: object) -> tuple[str, str, int]:
    out = await shell(
        context(ws, **confinement), {"command": command, "timeout": 60, "allowFailure": True}
    )
    return out.text, out.details.get("stderr", ""), out.details["exitCode"]


# -- 1. unprivileged ------------------------------------------------------------------------------


async def test_inside_no_capability_no_new_privileges_and_not_root_on_the_host(ws: Path):
    text, _, _ = await run(
        ws,
        "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Uid|Gid):' /proc/self/status; touch made-here",
    )
    status = dict(line.split(":", 1) for line in text.splitlines())
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[cap].strip(), 16) == 0, f"{cap} is {status[cap].strip()}"
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Uid"].split()[0] == "1000" and status["Gid"].split()[0] == "1000"
    owner = (ws / "made-here").stat().st_uid
    assert owner != 0, "a file the sandbox made is root's on the host: it ran as root"
    assert owner == (bwrap.identity().uid if os.geteuid() == 0 else os.geteuid())


def writable_sysctls() -> list[str]:
    """Every kernel setting the host lets root read and write (written back with its own value)."""
    found = []
    for dirpath, _dirs, files in os.walk("/proc/sys"):
        for name in files:
            path = os.path.join(dirpath, name)
            if os.access(path, os.R_OK | os.W_OK):
                try:
                    with open(path) as fh:
                        fh.read(1)
                except OSError:
                    continue
                found.append(path)
    return sorted(found)


async def test_no_kernel_setting_of_the_host_can_be_written(ws: Path):
    targets = writable_sysctls()
    assert "/proc/sys/kernel/core_pattern" in targets and len(targets) > 50
    before = {
        p: Path(p).read_bytes() for p in ("/proc/sys/kernel/core_pattern", "/proc/sys/fs/file-max")
    }
    (ws / "targets").write_text("\n".join(targets) + "\n")
    # Each setting gets its own current value back: harmless on the host if a write got through.
    script = (
        'while IFS= read -r f; do v=$(cat "$f" 2>/dev/null) || continue; '
        'if printf "%s\\n" "$v" > "$f" 2>/dev/null; then echo "WROTE $f"; fi; done < targets; '
        "echo 1 > /proc/sysrq-trigger 2>/dev/null && echo WROTE sysrq; echo done"
    )
    text, _, _ = await run(ws, script)
    assert text.endswith("done")
    assert [line for line in text.splitlines() if line.startswith("WROTE")] == []
    assert {p: Path(p).read_bytes() for p in before} == before


async def test_mount_unshare_setuid_programs_and_the_worker_are_out_of_reach(ws: Path):
    worker = os.getpid()
    script = (
        "mkdir m; mount -t tmpfs none m 2>/dev/null && echo MOUNTED; "
        "unshare -U true 2>/dev/null && echo USERNS; unshare -r true 2>/dev/null && echo USERNS-ROOT; "
        "unshare -m true 2>/dev/null && echo MOUNTNS; "
        "su root -c id </dev/null 2>/dev/null | grep -q uid=0 && echo SU; "
        "mount --bind /usr m 2>/dev/null && echo SETUID-MOUNT; "
        f"kill -0 {worker} 2>/dev/null && echo SIGNALLED; "
        "for p in /proc/[0-9]*; do echo \"PID $(tr '\\0' ' ' < $p/cmdline | cut -c1-60)\"; done; echo done"
    )
    text, _, _ = await run(ws, script)
    lines = text.splitlines()
    assert [line for line in lines if not line.startswith("PID")] == ["done"], text
    seen = [line for line in lines if line.startswith("PID")]
    # Its own PID namespace: bubblewrap's init and the command, none of the host's processes.
    assert len(seen) <= 3 and not any("pytest" in line.split("/")[-1] for line in seen), seen
    assert len(os.listdir("/proc")) > len(seen) + 20


# -- 2. an allow-list of what it sees -----------------------------------------------------------------


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """Canaries the sandbox must not see: beside the workspace, in /etc, in /run, a socket."""
    tag = uuid.uuid4().hex[:8]
    places = {
        "sibling": tmp_path / "sibling-project" / ".env",
        "etc_env": Path(f"/etc/xsky-canary-{tag}.env"),
        "etc_key": Path(f"/etc/ssl/private/xsky-canary-{tag}.key"),
        "opt": Path(f"/opt/xsky-canary-{tag}/secret"),
        "var": Path(f"/var/tmp/xsky-canary-{tag}/secret"),
    }
    made: list[Path] = []
    for name, path in places.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"CANARY-{name}-{tag}\n")
            made.append(path)
        except OSError:
            pass
    yield {name: path for name, path in places.items() if path in made}
    for path in made:
        path.unlink(missing_ok=True)
        if path.parent.name.startswith("xsky-canary-"):
            shutil.rmtree(path.parent, ignore_errors=True)


async def test_only_the_allow_list_is_visible(ws: Path, planted: dict[str, Path]):
    paths = " ".join(str(p) for p in planted.values())
    text, _, _ = await run(
        ws,
        f"for f in {paths}; do cat $f 2>/dev/null; done; "
        "for d in /home /root /opt /srv /mnt /run /var/run /var/lib /sys/fs /sys/kernel; do "
        '[ -e "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null)" ] && echo "SEES $d"; done; '
        "for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/machine-id /etc/ssh /etc/gitconfig /etc/npmrc "
        "/etc/pip.conf /etc/ssl/private; do [ -e $f ] && echo SEES $f; done; "
        "cat /etc/passwd | cut -d: -f1 | tr '\\n' ' '; echo; ls ..; echo done",
    )
    assert "CANARY" not in text, text
    assert "SEES" not in text, text
    lines = text.splitlines()
    assert lines[-3].split() == ["root", "agent", "nobody"]
    assert lines[-2] == "workspace"  # the workspace's parent holds nothing else in view


async def test_no_host_unix_socket_is_reachable(ws: Path, tmp_path: Path):
    folder = Path(f"/tmp/xsky-socket-{uuid.uuid4().hex[:8]}")
    folder.mkdir(mode=0o777)
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen(4)
    abstract = socket.socket(socket.AF_UNIX)
    name = f"xsky-canary-{uuid.uuid4().hex[:8]}"
    abstract.bind("\0" + name)
    abstract.listen(4)
    reached: list[str] = []

    def accept(s: socket.socket, what: str) -> None:
        try:
            s.accept()
            reached.append(what)
        except OSError:
            pass

    for s, what in ((server, "path"), (abstract, "abstract")):
        threading.Thread(target=accept, args=(s, what), daemon=True).start()
    try:
        code = (
            "import socket\n"
            f"for a in ({str(path)!r}, '\\0{name}'):\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try:\n        s.connect(a); print('CONNECTED', repr(a))\n"
            "    except OSError as e:\n        print('refused', e.errno)\n"
        )
        (ws / "probe.py").write_text(code)
        text, _, _ = await run(ws, "python3 probe.py")
        # Each connect was refused in the sandbox, so none can reach the listeners later.
        assert text.count("refused") == 2 and "CONNECTED" not in text and reached == [], text
    finally:
        server.close()
        abstract.close()
        shutil.rmtree(folder, ignore_errors=True)


async def test_the_worker_settings_may_add_a_read_only_folder(ws: Path, tmp_path: Path):
    tool = tmp_path / "toolchain"
    tool.mkdir()
    tool.chmod(0o755)
    (tool / "version").write_text("toolchain 1.0\n")
    (tool / "version").chmod(0o644)
    text, _, _ = await run(
        ws, f"cat {tool}/version; touch {tool}/x 2>/dev/null && echo WROTE; echo done"
    )
    assert "toolchain" not in text  # not in view by default
    text, _, _ = await run(
        ws,
        f"cat {tool}/version; touch {tool}/x 2>/dev/null && echo WROTE; echo done",
        read_only_paths=(tool,),
    )
    assert text.splitlines() == ["toolchain 1.0", "done"]


# -- 8. nothing planted runs later ----------------------------------------------------------------------


def person_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A person's git in that repository: trusting it (safe.directory), as one who has read it would."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent / "person-home")}
    (repo.parent / "person-home").mkdir(exist_ok=True)
    return subprocess.run(
        ["git", "-c", f"safe.directory={repo}", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )


async def test_a_repository_a_command_makes_keeps_no_code_for_a_persons_git(
    ws: Path, tmp_path: Path
):
    canary = tmp_path / f"planted-ran-{uuid.uuid4().hex[:6]}"
    script = (
        "git init -q repo && cd repo && git config user.email a@b && git config user.name a && "
        f"git config core.fsmonitor 'touch {canary}.fsmonitor; false' && "
        f"git config core.pager 'touch {canary}.pager; cat' && "
        f"git config alias.st '!touch {canary}.alias' && "
        f"printf '#!/bin/sh\\ntouch {canary}.hook\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "
        "echo x > f && git add f && echo made"
    )
    out = await shell(context(ws), {"command": script, "timeout": 60})
    assert out.text.startswith("made")
    assert "core.fsmonitor" in out.text and "pre-commit" in out.text  # said where the agent reads
    repo = ws / "repo"
    for args in (
        ["status"],
        ["diff", "HEAD"],
        ["-c", "core.pager=cat", "log"],
        ["commit", "-qm", "x"],
        ["st"],
    ):
        person_git(repo, *args)
    assert not list(tmp_path.glob(canary.name + "*")), "a planted command ran on the person's side"
    assert not os.access(repo / ".git" / "hooks" / "pre-commit", os.X_OK)
    config = (repo / ".git" / "config").read_text()
    assert "touch" not in config and "fsmonitor" not in config, config


async def test_an_existing_repository_keeps_its_config_and_hooks(ws: Path):
    subprocess.run(["git", "init", "-q", str(ws / "project")], check=True)
    config = ws / "project" / ".git" / "config"
    before = config.read_text()
    text, _, _ = await run(
        ws,
        "cd project && git config core.fsmonitor evil 2>/dev/null && echo CONFIG; "
        "printf '#!/bin/sh\\n' > .git/hooks/post-checkout 2>/dev/null && echo HOOK; echo done",
    )
    assert text.splitlines() == ["done"], text
    assert config.read_text() == before
    assert not (ws / "project" / ".git" / "hooks" / "post-checkout").exists()


def test_cleaning_a_config_never_writes_through_a_link_planted_beside_it(tmp_path: Path):
    """The worker rewrites a repository's config in the agent's folder: a link planted where a
    temporary file might go (a host file behind it, here a canary) is never written through,
    and the canary keeps its content and its owner."""
    git = tmp_path / "ws" / "project" / ".git"
    git.mkdir(parents=True)
    (git / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tfsmonitor = evil\n")
    canary = tmp_path / "host-file"
    canary.write_text("the host's own text\n")
    before = canary.stat()
    for name in ("config.xsky-tmp", "config.tmp", "config.lock", ".xsky-config.tmp"):
        (git / name).symlink_to(canary)
    notes = git_guard.sweep(tmp_path / "ws")
    assert notes == ["project/.git/config: removed core.fsmonitor"]
    assert canary.read_text() == "the host's own text\n"
    after = canary.stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (
        before.st_uid,
        before.st_gid,
        before.st_mode,
    )
    assert "fsmonitor" not in (git / "config").read_text()
    assert not (git / "config").is_symlink()
    assert sorted(p.name for p in git.iterdir() if not p.is_symlink()) == ["config"]


def test_the_config_allow_list_keeps_data_and_drops_every_way_to_run_a_program():
    text = (
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = evil\n\thooksPath = /tmp/h\n\tsshCommand = evil\n"
        '[remote "origin"]\n\turl = https://example.com/r.git\n\tuploadpack = evil\n'
        '[branch "main"]\n\tremote = origin\n[alias]\n\tst = !evil\n[include]\n\tpath = /tmp/x\n'
        '[includeIf "gitdir:/"]\n\tpath = /tmp/x\n[filter "lfs"]\n\tclean = evil\n[diff "x"]\n\ttextconv = evil\n'
        "[credential]\n\thelper = evil\n[gpg]\n\tprogram = evil\n[core.extra]\n\tthing = 1\n"
    )
    cleaned, removed = git_guard.clean_config(text)
    assert "evil" not in cleaned and "/tmp/" not in cleaned
    assert "repositoryformatversion = 0" in cleaned and "url = https://example.com/r.git" in cleaned
    assert "remote = origin" in cleaned
    assert {
        "core.fsmonitor",
        "core.hooksPath",
        "core.sshCommand",
        "alias.st",
        "include.path",
    } <= set(removed)


# -- the worker's own file tools -----------------------------------------------------------------


async def test_file_list_never_walks_a_link_out_of_the_workspace(ws: Path, tmp_path: Path):
    """A folder swapped for a link to a host folder is listed as a name, never walked."""
    from activities.tools.files import file_list

    outside = tmp_path / "host-folder"
    outside.mkdir()
    (outside / "host-secret-name.txt").write_text("x")
    (ws / "inside").mkdir()
    (ws / "inside" / "a.txt").write_text("a")
    (ws / "swapped").symlink_to(outside, target_is_directory=True)
    out = await file_list(context(ws), {"path": ".", "recursive": True})
    assert "inside/a.txt" in out.text
    assert "host-secret-name" not in out.text
