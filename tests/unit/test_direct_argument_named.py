"""A direct tool without its argument names a key of its config that nothing reads, which may
be that argument under another name (walk12: {"tool": "shell", "cmd": "ls"} said only "has no
command", and 'cmd' itself was nowhere in what validate said)."""

from __future__ import annotations

from xsky.plan.agent_config import direct_argument_problems
from xsky.plan.xml import parse_workflow


def _said(config: str) -> list[str]:
    plan = f'<workflow name="v"><agent name="shell" id="1"><task>a</task><config>{config}</config></agent></workflow>'
    return [p.message for p in direct_argument_problems(parse_workflow(plan))]


def test_an_unread_key_is_named_beside_the_missing_argument() -> None:
    (said,) = _said('{"tool": "shell", "cmd": "ls"}')
    assert said.startswith(
        "agent 1 (shell) has no command ('cmd' in its config is read by nothing: write it as "
        "'command'): add it to its config"
    )


def test_several_unread_keys_are_named_and_a_near_miss_of_a_known_key_is_not() -> None:
    # 'timout' is timeout's typo, said as that by config_key_problems
    (said,) = _said('{"tool": "shell", "cmd": "ls", "script": "x", "timout": 5}')
    assert "('cmd', 'script' in its config are read by nothing: write it as 'command')" in said
    assert "timout" not in said


def test_without_an_unread_key_it_is_said_as_before() -> None:
    (said,) = _said('{"tool": "shell", "timeout": 5}')
    assert said == (
        'agent 1 (shell) has no command: add it to its config, e.g. <config>{"tool": "shell", '
        '"command": "…"}</config>'
    )
