"""What reading an Eko plan said on the way (its mapping, each repair and each part left out)
reaches a person on every way a plan comes in: `replan --xml` and `fork --plan` (a file the
command checks first) and XML text given to the client, as `validate` and `run` show it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cli.steer_cmd import checked_plan_file
from client.handle import XSky
from xsky.config import load_settings

PLAN = """<root>
  <name>N</name>
  <template version="1.0"><variables><variable name="q"/></variables></template>
  <agents>
    <agent name="Chat" id="0"><task>a</task></agent>
  </agents>
</root>
"""
SAID = "3:3: <template> is not part of an Eko plan (name, thought, agents): left out"


def test_a_plan_file_checked_by_a_command_says_what_was_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "eko.xml"
    path.write_text(PLAN)
    checked = checked_plan_file(str(path), "nothing was done")
    assert checked is not None and [a.name for a in checked[1].agents] == ["llm"]
    said = " ".join(capsys.readouterr().err.split())
    assert "read as an Eko plan" in said
    assert f"warning: {path}:{SAID}" in said


def test_xml_text_given_to_the_client_says_what_was_left_out() -> None:
    notes: list[str] = []
    x: Any = XSky(client=None, settings=load_settings())  # type: ignore[arg-type] # (no server needed)
    workflow = x.load(PLAN, on_note=notes.append)
    assert [a.name for a in workflow.agents] == ["llm"]
    assert notes[0].startswith("read as an Eko plan")
    assert f"warning: <plan>:{SAID}" in notes


async def test_replan_xml_says_what_reading_the_file_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command shows the warnings at the file's lines; the run's reply, which says them
    again for the stock `temporal` CLI (`<plan>:…`), is shown without them."""
    import argparse

    from cli import steer_cmd
    from xsky.leader.state import InterventionResult

    path = tmp_path / "eko.xml"
    path.write_text(PLAN)

    class Ran:
        id = "r"

        async def board_pages(self) -> AsyncIterator[object]:
            yield type("Board", (), {"tasks": [], "total": 0})()  # nothing has run yet

        async def plan(self) -> str:
            return '<workflow name="w"><agent name="llm" id="0"><task>t</task></agent></workflow>'

        async def replan(self, prompt: str | None, xml: str | None) -> InterventionResult:
            assert prompt is None and xml == PLAN
            return InterventionResult(message=f"plan v2: added 0\nwarning: <plan>:{SAID}")

    async def ran(args: argparse.Namespace) -> tuple[None, Ran]:
        return None, Ran()

    monkeypatch.setattr(steer_cmd, "_run", ran)
    args = argparse.Namespace(id="r", prompt=None, xml=str(path), json=False)
    assert await steer_cmd.cmd_replan(args) == 0
    said = capsys.readouterr()
    assert " ".join(said.out.split()) == "plan v2: added 0"
    assert " ".join(said.err.split()).count(SAID) == 1


async def test_a_whole_eko_plan_is_a_replan_and_only_the_rest_of_one_is_refused() -> None:
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from cli import steer_cmd
    from xsky.errors import UsageError
    from xsky.leader.core import LeaderCore
    from xsky.leader.state import PageRequest
    from xsky.plan.xml import parse_workflow_source, workflow_to_xml
    from xsky.runs import RunInput

    eko = """<root><name>links</name><agents>
      <agent name="Chat" id="0" dependsOn=""><task>Find the article links</task>
        <nodes><node output="links">Extract them</node><node>Summarize</node></nodes></agent>
      <agent name="Chat" id="1" dependsOn="0"><task>Read every article</task>
        <nodes><forEach items="links"><node>Open it</node></forEach></nodes></agent>
    </agents></root>"""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    core = LeaderCore(RunInput(workflow=parse_workflow_source(eko).workflow), "r", now)
    core.dispatch(now)  # 0.links runs: the plan as it runs has ids the Eko plan does not
    tasks = core.views.board_page(now, PageRequest(offset=0, limit=200)).tasks

    class Run:
        id = "r"

        async def board_pages(self) -> AsyncIterator[object]:
            for at in range(0, len(tasks), 2):  # pages of two: all of them are read
                yield SimpleNamespace(tasks=tasks[at : at + 2], total=len(tasks))

        async def plan(self) -> str:
            return workflow_to_xml(core.plans.plan)

    more = eko.replace("</agents>", '<agent name="Chat" id="2" dependsOn="1"><task>Digest</task></agent></agents>')  # fmt: skip
    await steer_cmd._no_eko_remainder(Run(), parse_workflow_source(more).workflow, "p.xml")
    rest = '<root><name>r</name><agents><agent name="Chat" id="0" dependsOn=""><task>Digest</task></agent></agents></root>'  # fmt: skip
    with pytest.raises(UsageError, match="is an Eko plan without T-0.links as they ran or run"):
        await steer_cmd._no_eko_remainder(Run(), parse_workflow_source(rest).workflow, "p.xml")


def test_a_plan_file_given_to_the_client_says_what_validate_warns_of(tmp_path: Path) -> None:
    """walk8: `validate` warned that a shell agent without a command "runs only on a worker
    with a model … and fails at once without one"; `run` of the same file said nothing, started
    it, and it failed at once."""
    path = tmp_path / "notool.xml"
    path.write_text(
        '<workflow name="notool">\n  <agent name="shell" id="1"><task>list files</task></agent>\n'
        "</workflow>\n"
    )
    notes: list[str] = []
    x: Any = XSky(client=None, settings=load_settings())  # type: ignore[arg-type] # (no server needed)
    x.load(str(path), on_note=notes.append)
    assert any(
        n.startswith(
            f"warning: {path}:2:3: agent 1 (shell) has no command: it runs only on a worker"
        )
        for n in notes
    ), notes
