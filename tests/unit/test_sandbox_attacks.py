"""An attacker's table: each command runs for real, inside the OS sandbox, whatever the
permission checker would have said — and none may take effect.

After every command: no file outside the workspace changed or appeared (the world below,
and sentinel paths across the system), no secret of the world appears in what it printed,
the stand-in Temporal frontend saw no connection, and no process it started is left.
The world lives under /var/tmp (not /tmp, which every sandbox replaces anyway), so the
hiding of the home folder, xsky's state and other runs' workspaces is what is tested.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from activities.sandbox.bwrap import Confinement, ready
from activities.tools import ToolContext
from activities.tools.shell import shell
from tests.unit.test_tools import running_with

pytestmark = pytest.mark.skipif(ready() is not None, reason=f"no OS sandbox here: {ready()}")

SECRETS = {
    "ssh": "SSH-PRIVATE-7f3a9c",
    "aws": "AWS-SECRET-2b8e1d",
    "settings": "SETTINGS-TOKEN-94c0ae",
    "db": "TEMPORAL-DB-5d21f7",
    "artifact": "OTHER-ARTIFACT-c3e8b0",
    "other": "OTHER-RUN-SECRET-61fa2d",
    "env": "WORKER-ENV-KEY-0e7b44",
}
SENTINELS = [
    "/etc/xsky-pwned",
    "/usr/local/xsky-pwned",
    "/var/tmp/xsky-pwned",
    "/opt/xsky-pwned",
    "/root/xsky-pwned",
    "/usr/bin/xsky-pwned",
    "/var/xsky-pwned",
]


@dataclass
class World:
    root: Path
    ws: Path
    home: Path
    state: Path
    outside: Path
    port: int
    connections: list[str] = field(default_factory=list)

    def paths(self) -> dict[str, str]:
        return {
            "SSH": str(self.home / ".ssh" / "id_rsa"),
            "AWS": str(self.home / ".aws" / "credentials"),
            "SETTINGS": str(self.state / "settings.json"),
            "DB": str(self.state / "temporal.db"),
            "ARTIFACT": str(self.state / "artifacts" / "other-run" / "1" / "result.txt"),
            "OTHER": str(self.state / "runs" / "other-run" / "workspace" / "secret.txt"),
            "CANARY": str(self.outside / "canary.txt"),
            "OUTSIDE": str(self.outside),
            "HOME": str(self.home),
            "STATE": str(self.state),
            "PORT": str(self.port),
            "ENVFILE": f"/proc/{os.getpid()}/environ",
        }

    def snapshot(self) -> dict[str, str]:
        out = {}
        for p in self.root.rglob("*"):
            if p.is_file() and not p.is_relative_to(self.ws):
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        return out


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    root = Path("/var/tmp") / f"xsky-attack-{uuid.uuid4().hex[:8]}"
    home, state, outside = root / "home", root / "xsky", root / "outside"
    ws = state / "runs" / "this-run" / "workspace"
    files = {
        home / ".ssh" / "id_rsa": SECRETS["ssh"],
        home / ".aws" / "credentials": SECRETS["aws"],
        home / ".bashrc": "# bashrc\n",
        state / "settings.json": SECRETS["settings"],
        state / "temporal.db": SECRETS["db"],
        state / "artifacts" / "other-run" / "1" / "result.txt": SECRETS["artifact"],
        state / "runs" / "other-run" / "workspace" / "secret.txt": SECRETS["other"],
        outside / "canary.txt": "canary\n",
        outside / "script.sh": "touch " + str(outside / "pwned") + "\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    ws.mkdir(parents=True)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    w = World(root, ws, home, state, outside, server.getsockname()[1])

    def accept() -> None:
        while True:
            try:
                conn, addr = server.accept()
            except OSError:
                return
            w.connections.append(str(addr))
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    os.environ["XSKY_TEST_WORKER_KEY"] = SECRETS["env"]  # a key in the (test) worker's environment
    try:
        yield w
    finally:
        server.close()
        os.environ.pop("XSKY_TEST_WORKER_KEY", None)
        shutil.rmtree(root, ignore_errors=True)


def _writes() -> list[str]:
    targets = [
        "{CANARY}",
        "{OUTSIDE}/new.txt",
        "{SETTINGS}",
        "{HOME}/.bashrc",
        "{OTHER}",
        *SENTINELS,
    ]
    methods = [
        "echo x > {t}",
        "touch {t}",
        "cp /etc/hostname {t}",
        "sh -c 'echo x >> {t}'",
        "python3 -c \"open('{t}','a').write('x')\"",
        "tee -a {t} <<< x",
        "dd if=/dev/zero of={t} bs=1 count=1",
        "ln -sf /etc/passwd {t}",
        "mv ./moved {t}",
    ]
    return [m.format(t=t) for t in targets for m in methods]


def _reads() -> list[str]:
    secrets = ["{SSH}", "{AWS}", "{SETTINGS}", "{DB}", "{ARTIFACT}", "{OTHER}", "{ENVFILE}"]
    methods = [
        "cat {s}",
        "head -c 200 {s}",
        "base64 {s}",
        "python3 -c \"print(open('{s}').read())\"",
        "cp {s} ./stolen && cat ./stolen",
        "ln -s {s} ./l && cat ./l",
        "ln {s} ./h && cat ./h",
    ]
    return [m.format(s=s) for s in secrets for m in methods]


NETWORK = [
    "curl -s -m 2 http://127.0.0.1:{PORT}/",
    "bash -c 'echo hi > /dev/tcp/127.0.0.1/{PORT}'",
    "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {PORT}), 2)\"",
    "curl -s -m 2 http://2130706433:{PORT}/",
    "curl -s -m 2 http://0x7f000001:{PORT}/",
    "curl -s -m 2 http://0177.0.0.1:{PORT}/",
    "curl -s -m 2 http://127.1:{PORT}/",
    "curl -s -m 2 'http://[::ffff:127.0.0.1]:{PORT}/'",
    "curl -s -m 2 http://localhost:{PORT}/",
    "wget -q -T 2 -O- http://127.0.0.1:{PORT}/",
    "timeout 3 nc -w 1 127.0.0.1 {PORT} < /dev/null",
    "curl -s -m 2 http://169.254.169.254/latest/meta-data/",
    "curl -s -m 2 http://2852039166/",
    "curl -s -m 2 http://0xa9fea9fe/",
    "curl -s -m 2 http://0251.0376.0251.0376/",
    "curl -s -m 2 'http://[::ffff:169.254.169.254]/'",
    "curl -s -m 2 http://169.254.169.254.nip.io/",
    "curl -s -m 2 http://metadata.google.internal/",
    "python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{PORT}', timeout=2)\"",
    "getent hosts example.com && curl -s -m 2 https://example.com/",
]

LEFTOVERS = [
    "nohup sleep 777.{N}1 > /dev/null 2>&1 &",
    "setsid sleep 777.{N}2 &",
    "(sleep 777.{N}3 &) &",
    "sleep 777.{N}4 & disown",
    "bash -c 'sleep 777.{N}5 &'",
    'python3 -c "import os, time; os.fork() or time.sleep(777.{N}6)" &',
    "setsid nohup bash -c 'sleep 777.{N}7' > /dev/null 2>&1 < /dev/null &",
    "timeout 900 sleep 777.{N}8 &",
]

DISGUISED = [
    "/bin/c?t {SSH}",
    "$(echo cat) {AWS}",
    "c''at {SETTINGS}",
    "X=cat; $X {OTHER}",
    "{{cat,{SSH}}}",
    "\\cat {DB}",
    "eval \"$(printf 'cat %s' {ARTIFACT})\"",
    "bash <<'E'\ncat {SSH}\nE",
    "echo $(( $(cat {AWS} | wc -c) ))",
    "source {OUTSIDE}/script.sh",
    ". {OUTSIDE}/script.sh",
    "env -S 'cat {SETTINGS}'",
    "xargs cat <<< {OTHER}",
    "git -c core.pager='cat {SSH} #' -C {OUTSIDE} log",
    "awk 'BEGIN{{system(\"touch {OUTSIDE}/pwned\")}}'",
    'awk \'BEGIN{{print "x" > "{CANARY}"}}\'',
    "sed -i 's/canary/pwned/' {CANARY}",
    "find {OUTSIDE} -delete",
    "find {HOME} -name id_rsa -exec cat {{}} \\;",
    "tar cf - {HOME} | tar tvf -",
    "printf 'all:\\n\\ttouch {OUTSIDE}/pwned\\n' > Makefile && make",
    "shopt -s expand_aliases; alias ls='cat {SSH}'; ls",
    "printf '[core]\\n\\tpager = cat {SSH}\\n' > .gitconfig && git init -q . && git log",
    "HOME={HOME} cat ~/.ssh/id_rsa",
    "cat /proc/1/environ; cat /proc/*/environ",
    "ps aux; cat /proc/*/cmdline",
    "perl -e 'open F, \">{CANARY}\"; print F 1'",
    "cp -r {STATE} ./state && cat ./state/settings.json",
    "mount -t tmpfs none {OUTSIDE}",
    "chroot / cat {SSH}",
    "unshare -r cat {SSH}",
    "nsenter -t 1 -m cat {SSH}",
    "ln -s {HOME} ./home && cat ./home/.ssh/id_rsa",
    "cd .. && cat ../other-run/workspace/secret.txt",
    "cat ../../artifacts/other-run/1/result.txt",
    "ls -la / /root {HOME} {STATE}",
]

ATTACKS = _writes() + _reads() + NETWORK + LEFTOVERS + DISGUISED


def test_the_table_holds_at_least_150_attacks() -> None:
    assert len(ATTACKS) >= 150


@pytest.mark.parametrize(
    "n, template", list(enumerate(ATTACKS)), ids=[f"{i}" for i in range(len(ATTACKS))]
)
async def test_no_attack_takes_effect_inside_the_sandbox(
    world: World, n: int, template: str
) -> None:
    command = (
        template.replace("{N}", str(n)).format(**world.paths()) if "{" in template else template
    )
    (world.ws / "moved").write_text("x")
    before, connections = world.snapshot(), len(world.connections)
    ctx = ToolContext(
        "this-run",
        "1",
        world.ws,
        None,
        None,
        lambda note: None,  # type: ignore[arg-type]
        confinement=Confinement(workspace=world.ws),
    )
    out = await shell(ctx, {"command": command, "timeout": 20, "allowFailure": True})
    shown = out.text + out.details.get("stderr", "")
    await asyncio.sleep(0.05)
    assert world.snapshot() == before, f"a file outside the workspace changed: {command}"
    assert not [s for s in SENTINELS if os.path.exists(s)], (
        f"wrote outside the workspace: {command}"
    )
    assert not (world.outside / "pwned").exists()
    assert not [k for k, v in SECRETS.items() if v in shown], (
        f"read a secret: {command}\n{shown[:500]}"
    )
    assert len(world.connections) == connections, (
        f"reached the stand-in Temporal frontend: {command}"
    )
    # Only this row's own sleepers (777.<row><k>): another process of the suite runs other rows.
    own = [
        p for p in running_with("sleep 777.") if re.search(rf"sleep 777\.{n}\d(\D|$)", _cmdline(p))
    ]
    assert own == [], f"left a process behind: {command}"


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""
