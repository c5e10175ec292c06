"""`starter.py files RUN [PATH]`: a person lists a run's workspace and prints a file from it,
confined to the workspace — a path or a link that leads out is refused, as are links inside."""

from __future__ import annotations

import asyncio
import json
import uuid
from xml.sax.saxutils import escape

import pytest

from client import XSky
from client.workspace_files import list_files, read_file
from tests.conftest import Env
from tests.integration.test_cli_runs import starter
from xsky.errors import UsageError

pytestmark = pytest.mark.integration

WRITES = (
    "mkdir -p out empty && echo hello > out/note.txt && ln -s /etc/passwd leak && "
    "ln -s /etc etc && ln -s out/note.txt alias && printf 'x\\033]0;pwned\\007y' > esc.txt"
)


async def test_files_lists_the_workspace_prints_a_file_and_refuses_what_leads_out(env: Env):
    await env.start_worker()
    plan = (
        '<workflow name="files" taskId="files"><agent name="shell" id="1"><task>write</task>'
        f"<config>{escape(json.dumps({'tool': 'shell', 'command': WRITES}))}</config></agent></workflow>"
    )
    async with XSky.connect() as x:
        run = await x.run(plan, id=f"xsky-files-{uuid.uuid4().hex[:6]}")
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"
        root = await run.workspace()

    code, out, err = await starter(env, "files", run.id, "--json")
    assert code == 0, err
    files = json.loads(out)["files"]
    assert {"out/note.txt", "esc.txt", "empty/"} <= set(files), files
    code, out, err = await starter(env, "files", run.id, "out/note.txt")
    assert (code, out) == (0, "hello\n"), err
    code, out, err = await starter(env, "files", run.id, "esc.txt", "--json")  # (it was raw)
    said = json.loads(out)
    assert code == 0 and said["content"] == "x\x1b]0;pwned\x07y" and said["encoding"] == "utf-8"
    assert said["path"] == "esc.txt" and said["size"] == 12 and "\x1b" not in out, out

    for path, says in [
        ("leak", "outside the run's workspace"),  # a link to a file outside
        ("etc/passwd", "outside the run's workspace"),  # through a link to a folder outside
        ("../../../etc/passwd", "outside the run's workspace"),
        ("/etc/passwd", "outside the run's workspace"),
        ("empty/none.txt", "no file 'empty/none.txt'"),
    ]:
        with pytest.raises(UsageError, match=says):
            read_file(root, run.id, path)
    with pytest.raises(UsageError, match="outside the run's workspace"):
        list_files(root, run.id, "etc")
    # a link that stays inside reads the file it names; control characters reach no terminal
    assert read_file(root, run.id, "alias") == b"hello\n"
    assert read_file(root, run.id, "esc.txt") == b"x\x1b]0;pwned\x07y"
