"""Roles and settings.json: the built-ins, merging layers, and errors that name file, line and field."""

from __future__ import annotations

import json

import pytest

from xsky.plan.models import RoleCapabilityModel
from xsky.security.roles import BUILTIN_ROLES, TOOLS, merge_roles, role_problems
from xsky.settings_files import (
    SettingsError,
    load_layers,
    parse_settings,
    permission_mode,
    role_layers,
)

PRESETS = (
    "architect",
    "backend",
    "frontend",
    "fullstack",
    "explore",
    "verify",
    "doc",
    "test",
    "devops",
    "data",
    "security",
    "ui-design",
    "refactor",
)


def test_the_four_tool_agents_and_the_thirteen_presets_are_built_in():
    assert set(BUILTIN_ROLES) == {"browser", "llm", "file", "shell", *PRESETS}
    for role in BUILTIN_ROLES.values():
        assert role_problems(role) == [], role.name
        assert len(role.system_prompt) > 200 and role.description
        assert "ask_user" in role.allowed_tools


def test_presets_have_sensible_tool_sets():
    assert (
        "shell" not in BUILTIN_ROLES["explore"].allowed_tools
        and "shell" in BUILTIN_ROLES["explore"].requested_tools
    )
    assert "file_write" not in BUILTIN_ROLES["security"].allowed_tools
    assert {"shell", "python_exec"} <= set(BUILTIN_ROLES["test"].allowed_tools)
    assert "browser_screenshot" in BUILTIN_ROLES["ui-design"].allowed_tools


def test_later_layers_win_field_by_field():
    roles = merge_roles(
        BUILTIN_ROLES.values(),
        {
            "verify": {"allowed_tools": ["file_read"]},
            "perf": {"description": "performance", "allowed_tools": ["shell"]},
        },
        [RoleCapabilityModel(name="perf", system_prompt="You measure.")],
    )
    assert roles["verify"].allowed_tools == ["file_read"]
    assert (
        roles["verify"].system_prompt == BUILTIN_ROLES["verify"].system_prompt
    )  # untouched field kept
    assert (
        roles["perf"].description == "performance" and roles["perf"].system_prompt == "You measure."
    )


def test_role_problems_name_unknown_tools_and_bad_names():
    bad = RoleCapabilityModel(
        name="ok-name", allowed_tools=["shell", "teleport"], requested_tools=["shell"]
    )
    problems = role_problems(bad)
    assert any("unknown allowedTools teleport" in p for p in problems)
    assert any("shell both allowed and requested" in p for p in problems)
    assert len(TOOLS) == 16  # with mcp_list and mcp_read (the tools of MCP servers are discovered)


def test_settings_parse_roles_permissions_and_mode():
    text = json.dumps(
        {
            "roles": {
                "custom-role": {
                    "description": "Custom role",
                    "systemPrompt": "You optimise.",
                    "allowedTools": ["file_read", "code_search", "shell"],
                    "skillNames": ["perf"],
                }
            },
            "permissions": {"allow": ["shell(git log:*)"], "deny": ["shell(rm:*)"]},
            "security": {"permission_mode": "accept_edits"},
        }
    )
    settings = parse_settings(text, "s.json")
    assert settings.roles["custom-role"].allowed_tools == ["file_read", "code_search", "shell"]
    assert settings.permissions.deny == ["shell(rm:*)"]
    assert settings.security.permission_mode == "accept_edits"


@pytest.mark.parametrize(
    "text, where, fragment",
    [
        (
            '{\n  "roles": {\n    "x": {\n      "sytemPrompt": "typo"\n    }\n  }\n}',
            "s.json:4:7",
            "unknown field 'sytemPrompt'",
        ),
        ('{"roles": {"x": {"description": "a",}}}', "s.json:1:37", "not valid JSON"),
        ('{\n"permisions": {}}', "s.json:2:1", "unknown field 'permisions'"),
        ('{"security": {"permission_mode": "yolo"}}', "s.json:1:15", "permission_mode"),
        ("[1, 2]", "s.json:1:1", "must be a JSON object"),
    ],
)
def test_settings_errors_name_the_file_line_and_field(text, where, fragment):
    with pytest.raises(SettingsError) as info:
        parse_settings(text, "s.json")
    assert str(info.value).startswith(where) and fragment in str(info.value)


def test_layers_load_user_then_project(tmp_path, monkeypatch):
    user = tmp_path / "user.json"
    user.write_text(
        json.dumps(
            {"roles": {"r": {"description": "from user"}}, "security": {"permission_mode": "plan"}}
        )
    )
    project = tmp_path / "proj"
    (project / ".xsky").mkdir(parents=True)
    (project / ".xsky" / "settings.json").write_text(
        json.dumps({"roles": {"r": {"description": "from project"}}})
    )
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(user))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))
    layers = load_layers()
    assert [layer.scope for layer in layers] == ["user", "project"]
    assert merge_roles(*role_layers(layers))["r"].description == "from project"
    assert permission_mode(layers) == "plan"
