"""Ordinary work keeps working inside the sandbox, through real runs: a C build with make, git
in the workspace, a venv and ``pip install`` from an index the worker's settings allow, and
network commands whose numbers are counts and timeouts, not addresses."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from activities.sandbox import bwrap
from tests.conftest import Env
from tests.integration.helpers import plan
from xsky.runs import RunOptions

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bwrap.ready() is not None, reason=f"no OS sandbox here: {bwrap.ready()}"),
]


def shell(agent_id: str, command: str, timeout: float = 120) -> str:
    config = json.dumps(
        {"tool": "shell", "command": command, "timeout": timeout, "retry": {"maximumAttempts": 1}}
    )
    return f'<agent name="shell" id="{agent_id}"><task>step {agent_id}</task><config><![CDATA[{config}]]></config></agent>'


def wheel(name: str, version: str, module: str, source: str) -> tuple[str, bytes]:
    """A minimal pure-Python wheel, built by hand (no build backend to download)."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{module}/__init__.py": source.encode(),
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: xsky-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return f"{dist}-py3-none-any.whl", buf.getvalue()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[int]:
    """A package index (PEP 503 simple layout) on loopback, with one package."""
    root = tmp_path / "index"
    filename, data = wheel(
        "xsky-probe", "1.0", "xsky_probe", "VALUE = 'installed-from-the-index'\n"
    )
    (root / "simple" / "xsky-probe").mkdir(parents=True)
    (root / "simple" / "xsky-probe" / filename).write_bytes(data)
    (root / "simple" / "xsky-probe" / "index.html").write_text(
        f'<a href="{filename}">{filename}</a>\n'
    )
    handler = partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.mark.timeout(600)  # a venv and a pip install in the sandbox: up to 240 s
async def test_ordinary_work_runs_in_the_sandbox(
    env: Env, index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    user = tmp_path / "worker-settings.json"
    user.write_text(
        json.dumps(
            {"permissions": {"allow": [f"network(domain:127.0.0.1:{index})", "shell(python3:*)"]}}
        )
    )
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(user))
    await env.start_worker(kinds=["shell", "llm"])
    build = (
        "mkdir -p build && printf '#include <stdio.h>\\nint main(void){puts(\"built\");return 0;}\\n' > build/hello.c && "
        "printf 'hello: hello.c\\n\\tcc -O1 -o hello hello.c\\n' > build/Makefile && make -s -C build && ./build/hello"
    )
    git = (
        "git init -q repo && cd repo && git config user.email agent@example.com && git config user.name agent && "
        "echo one > a.txt && git add a.txt && git commit -qm first && git log --format=%s"
    )
    url = f"http://127.0.0.1:{index}/simple"
    venv = (
        f"python3 -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check --no-cache-dir "
        f"--index-url {url} xsky-probe && printf 'import xsky_probe\\nprint(xsky_probe.VALUE)\\n' > check.py && "
        ".venv/bin/python check.py"
    )
    numbers = f"curl -s -m 10 --max-time 30 --retry 2 {url}/xsky-probe/ | grep -c whl"
    result = await env.run(
        plan(
            shell("1", build), shell("2", git), shell("3", venv, timeout=300), shell("4", numbers)
        ),
        timeout=240,
        options=RunOptions(max_auto_replans=0),
    )
    by_id = {a.id: a for a in result.agents}
    assert by_id["1"].result == "built", by_id["1"].error
    assert by_id["2"].result == "first", by_id["2"].error
    assert (by_id["3"].result or "").strip().endswith("installed-from-the-index"), by_id["3"].error
    assert by_id["4"].result == "1", by_id["4"].error
    # The numbers were numbers: no decision refused them as addresses.
    assert not [e for e in result.permission_log if e.effect == "deny"], result.permission_log
    assert any(
        e.tool == "network" and e.effect == "allow" and str(index) in e.arguments
        for e in result.permission_log
    )
