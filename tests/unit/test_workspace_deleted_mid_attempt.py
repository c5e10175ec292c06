"""A workspace deleted while an attempt works in it (chaos15's open item): the next command
does not make it again empty and run there, and a command during which it went is not taken
for done — the attempt fails, not retried, saying so. (The attempt after it is refused by
``workspace_for``: tests/unit/test_workspace_vanished.py.)"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from activities.tools import ToolContext, folder_identity
from activities.tools.shell import shell


def context(ws: Path, identity: tuple[int, int] | None) -> ToolContext:
    return ToolContext(
        "run-1",
        "1",
        ws,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        lambda note: None,
        unconfined=True,  # the folder is the host's either way; no sandbox needed to show it
        workspace_identity=identity,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "work.txt").write_text("the run's files")
    return folder


async def test_a_workspace_deleted_between_commands_is_not_made_again(ws: Path) -> None:
    ctx = context(ws, folder_identity(ws))
    assert (await shell(ctx, {"command": "cat work.txt"})).text == "the run's files"
    shutil.rmtree(ws)  # by hand, a cleanup script
    with pytest.raises(ApplicationError) as e:
        await shell(ctx, {"command": "echo done-one > out.txt"})
    assert e.value.type == "WorkspaceVanished" and e.value.non_retryable
    assert "was deleted before this command" in str(e.value)
    assert not ws.exists()  # not made again empty, nothing written there


async def test_a_command_during_which_the_workspace_went_is_not_taken_for_done(ws: Path) -> None:
    ctx = context(ws, folder_identity(ws))

    async def delete_and_remake() -> None:
        await asyncio.sleep(0.3)
        shutil.rmtree(ws)
        ws.mkdir()  # an empty folder of the same name: another inode

    deleting = asyncio.create_task(delete_and_remake())
    with pytest.raises(ApplicationError) as e:
        await shell(ctx, {"command": "sleep 1.5; echo finished"})
    await deleting
    assert e.value.type == "WorkspaceVanished"
    assert "was deleted while this command ran" in str(e.value)


async def test_without_an_identity_the_folder_is_made_as_before(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"  # direct use of the tool, outside an attempt
    out = await shell(context(fresh, None), {"command": "pwd"})
    assert out.text == str(fresh)
