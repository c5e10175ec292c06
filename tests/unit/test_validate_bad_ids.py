"""An agent whose id is missing or not an id (id="", id="-1") no longer hides the checks of
the whole plan: every other problem is said with it, and said of the agents as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from xsky.errors import PlanError
from xsky.plan.files import load_plan


def _problems(tmp_path: Path, agents: str) -> list[str]:
    path = tmp_path / "plan.xml"
    path.write_text(f'<workflow name="t" taskId="t">\n{agents}</workflow>\n')
    with pytest.raises(PlanError) as refused:
        load_plan(path)
    return [p.format() for p in refused.value.problems]


def test_bad_ids_and_the_problems_they_hid_are_said_at_once(tmp_path: Path) -> None:
    # (it said the two ids; fixed, four more came)
    said = _problems(
        tmp_path,
        '  <agent name="llm" id=""><task>a</task></agent>\n'
        '  <agent name="llm" id="-1"><task>b {{nosuch}}</task></agent>\n'
        '  <agent name="llm" id="3" depends="3"><task>c</task></agent>\n'
        '  <agent name="shel" id="4"><task>d</task></agent>\n'
        '  <agent name="shell" id="5"><task>e</task><config>{"tool": "shell"}</config></agent>\n',
    )
    expected = [
        "<plan>:2:3: agent #1: id '' is not valid",
        "<plan>:3:3: agent -1: id '-1' is not valid",
        "<plan>:3:3: agent -1: unknown variable {{nosuch}}",
        "<plan>:4:3: agent 3 depends on itself; remove '3' from its depends",
        "<plan>:5:3: agent 4: unknown agent name 'shel' (did you mean 'shell'?)",
        "<plan>:6:3: agent 5 (shell) has no command",
    ]
    assert len(said) == len(expected), said
    for line, start in zip(said, expected, strict=True):
        assert line.startswith(start), (line, start)


def test_a_bad_id_is_named_as_written_and_its_dependents_are_not_misjudged(
    tmp_path: Path,
) -> None:
    said = _problems(
        tmp_path,
        '  <agent name="llm" id="-1" depends="-1"><task>a</task></agent>\n'
        '  <agent name="llm" id="2" depends="-1"><task>b</task></agent>\n'
        '  <agent name="llm"><task>no id {{gone}}</task></agent>\n',
    )
    text = "\n".join(said)
    assert "agent -1 depends on itself; remove '-1' from its depends" in text
    assert "agent #3 has no id attribute" in text
    assert "agent #3: unknown variable {{gone}}" in text
    assert "unread-id" not in text  # (the id that stood in for it is never said)
    assert "agent 2 depends on unknown agent" not in text  # (-1 is an agent: its id is bad)


def test_a_bad_id_beside_a_reader_problem_is_said_too(tmp_path: Path) -> None:
    # (a <config> that is not JSON stopped before the model's own checks: the bad id was
    # said only once the config was fixed)
    said = _problems(
        tmp_path,
        '  <agent name="llm" id="-1"><task>a</task><config>not json</config></agent>\n'
        '  <agent name="shel" id="2"><task>b</task></agent>\n',
    )
    text = "\n".join(said)
    assert "agent -1: id '-1' is not valid" in text
    assert "<config> of agent -1 is not valid JSON" in text
    assert "agent 2: unknown agent name 'shel'" in text


def test_a_dependency_on_an_agents_name_says_the_id_to_write(tmp_path: Path) -> None:
    # real10: an Eko port's own tests (code-index file 18410302629, "should parse a valid
    # workflow XML") write `<agent name="Computer" dependsOn="Browser">`; Eko never runs such
    # an agent (no agent has that id), xsky refused it naming only the ids
    path = tmp_path / "eko.xml"
    path.write_text(
        "<root><name>AI Daily Morning Report</name><thought>Summarize AI news</thought><agents>\n"
        '<agent name="Browser"><task>Search for AI updates</task></agent>\n'
        '<agent name="Computer" dependsOn="Browser"><task>Send report</task></agent>\n'
        '<agent name="Chat" dependsOn="computer"><task>Say it is sent</task></agent>\n'
        '<agent name="Chat" dependsOn="Chat,Printer"><task>Say it again</task></agent>\n'
        "</agents></root>\n"
    )
    with pytest.raises(PlanError) as refused:
        load_plan(path)
    said = [p.message for p in refused.value.problems]
    assert said == [
        "agent 1 depends on unknown agent 'Browser' ('Browser' is agent 0's name: "
        "dependencies are ids — write '0'); ids in this plan: 0, 1, 2, 3",
        "agent 2 depends on unknown agent 'computer' ('computer' is agent 1's name: "
        "dependencies are ids — write '1'); ids in this plan: 0, 1, 2, 3",
        "agent 3 depends on unknown agent 'Chat' ('Chat' is the name of agents 2, 3: "
        "dependencies are ids); ids in this plan: 0, 1, 2, 3",
        "agent 3 depends on unknown agent 'Printer'; ids in this plan: 0, 1, 2, 3",
    ]
