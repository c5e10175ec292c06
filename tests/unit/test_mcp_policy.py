"""MCP tools in xsky's policy: their names, server configurations, discoveries, and the same
rules, roles and modes as every other tool (Claude Code's mcp__server and mcp__server__tool)."""

from __future__ import annotations

import pytest

from activities.mcp.launch import Place
from activities.mcp.servers import McpConfigError, ServerEntry, resolve
from activities.mcp.toolset import schema_problem, wanted
from activities.sandbox.egress_policy import Policy
from activities.sandbox.gate import Gate
from xsky.plan.agent_config import config_problems
from xsky.plan.models import RoleCapabilityModel
from xsky.security.mcp import (
    NAMING,
    McpDiscovery,
    McpServerSpec,
    MissingVariable,
    covers,
    entry_problem,
    expand,
    exposed_name,
    function,
    split,
    tool_infos,
)
from xsky.security.permissions import (
    ApprovedRule,
    PermissionLayer,
    PermissionSettings,
    approval_shaped,
    decide,
    parse_rule,
    run_rules_for,
    trusted_settings,
)
from xsky.security.roles import (
    effective_roles,
    person_only_tools,
    plan_role_problems,
    role_problems,
    trusted_role,
)
from xsky.settings_files import McpServerGrant, SettingsError, parse_mcp_json, parse_settings

WS = "/work/ws"
FS = RoleCapabilityModel(
    name="dev", allowed_tools=["file_read", "mcp__fs"], requested_tools=["mcp__gh__create_issue"]
)
HINTS = {"mcp__fs__delete": "destructive", "mcp__fs__read": "read_only"}


def rules(allow=(), ask=(), deny=(), mode="default") -> PermissionSettings:
    layer = PermissionLayer(
        scope="user", path="u.json", allow=list(allow), ask=list(ask), deny=list(deny)
    )
    return PermissionSettings(layers=[layer], mode=mode)


def d(tool, role=FS, settings=None, hints=HINTS):
    return decide(tool, {"path": "x"}, role, settings or rules(), WS, (), hints)


# -- names --------------------------------------------------------------------------------------


def test_names_split_into_server_and_tool_and_a_server_entry_covers_its_tools():
    assert split("mcp__fs__read_file") == ("fs", "read_file")
    assert split("mcp__fs") == ("fs", None) and split("shell") == ("", None)
    assert covers("mcp__fs", "mcp__fs__read_file") and covers("mcp__fs__a", "mcp__fs__a")
    assert not covers("mcp__fs", "mcp__fsx__a") and not covers("mcp__fs__a", "mcp__fs__b")
    assert entry_problem("mcp__my-server__do_it") is None
    assert "does not name a tool of server a" in entry_problem("mcp__a__")
    assert "does not name an MCP server" in entry_problem("mcp____x")
    assert "does not name a tool of server fs" in entry_problem("mcp__fs__a.b")


def test_a_tool_name_a_function_cannot_hold_is_shown_safe_and_short():
    assert exposed_name("fs", "read.file") == "mcp__fs__read_file"
    long = exposed_name("server", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__server__xxx")
    assert exposed_name("server", "x" * 99) != long  # the digest is of the whole name
    infos, refused = tool_infos("fs", [{"name": "read.file"}, {"name": "write"}])
    assert [(i.name, i.tool) for i in infos] == [
        ("mcp__fs__read_file", "read.file"),
        ("mcp__fs__write", "write"),
    ]
    assert refused == []


@pytest.mark.parametrize(
    "listed",
    [["danger.op", "danger_op"], ["danger_op", "danger.op"]],
    ids=["dot-first", "dot-last"],
)
def test_a_shown_name_that_is_another_tools_name_is_refused_whatever_the_order(listed):
    infos, refused = tool_infos("srv", [{"name": n} for n in listed])
    # danger_op keeps its own name; danger.op, shown so too, is not offered
    assert [(i.name, i.tool) for i in infos] == [("mcp__srv__danger_op", "danger_op")]
    (sentence,) = refused
    assert "its tool 'danger.op' is not offered" in sentence
    assert "mcp__srv__danger_op, is also the name of its tool 'danger_op'" in sentence


def test_two_changed_names_that_meet_are_both_refused_and_a_repeated_name_once():
    infos, refused = tool_infos(
        "s", [{"name": "a.b"}, {"name": "a/b"}, {"name": "c"}, {"name": "c"}]
    )
    assert [i.tool for i in infos] == ["c"]
    assert len(refused) == 3 and "lists its tool 'c' twice" in refused[2]
    assert "'a.b' is not offered" in refused[0] and "its tool 'a/b'" in refused[0]


def test_rules_and_role_entries_match_an_mcp_tools_real_name_too():
    long = "x" * 80
    shown = exposed_name("srv", long)
    real = {shown: f"mcp__srv__{long}", "mcp__srv__read_file": "mcp__srv__read.file"}
    role = RoleCapabilityModel(name="r", allowed_tools=["mcp__srv"])

    def decided(tool: str, settings: PermissionSettings, who=role) -> str:
        return decide(tool, {}, who, settings, WS, (), {}, real).effect

    # a deny or ask rule written with the server's own name holds for the tool it names
    assert decided(shown, rules(deny=[f"mcp__srv__{long}"])) == "deny"
    assert decided(shown, rules(ask=[f"mcp__srv__{long}"])) == "ask"
    assert decided(shown, rules()) == "allow"  # without a rule: the role's server entry
    # the strictest wins: a deny by one name beats an allow by the other
    assert decided(shown, rules(allow=[shown], deny=[f"mcp__srv__{long}"])) == "deny"
    # a role entry naming the real name holds the tool shown otherwise
    by_real = RoleCapabilityModel(name="q", allowed_tools=[f"mcp__srv__{long}"])
    assert decided(shown, rules(), by_real) == "allow"
    assert decide(shown, {}, by_real, rules(), WS).effect == "deny"  # without the real name


def test_a_record_made_before_the_clash_check_is_discovered_again():
    old = McpDiscovery(server="fs", config_digest="a", discovered_at=1000.0)
    assert not old.fresh(1001, "a")
    assert old.model_copy(update={"naming": NAMING}).fresh(1001, "a")


# -- configuration ------------------------------------------------------------------------------


def test_claude_codes_server_shapes_are_read_and_mistakes_are_named():
    stdio = McpServerSpec.model_validate(
        {"command": "npx", "args": ["-y", "x"], "env": {"T": "${TOKEN}"}}
    )
    http = McpServerSpec.model_validate(
        {"type": "http", "url": "https://h/mcp", "headers": {"A": "Bearer ${K}"}}
    )
    assert stdio.transport == "stdio" and http.transport == "http"
    assert stdio.references() == ["TOKEN"] and http.references() == ["K"]
    assert stdio.digest() != McpServerSpec.model_validate({"command": "npx"}).digest()
    for bad, says in [
        ({"type": "sse", "url": "https://h/sse"}, "SSE transport is deprecated"),
        ({"type": "http"}, 'needs "url"'),
        ({"args": ["x"]}, 'needs "command"'),
        ({"command": "x", "url": "https://h"}, "an HTTP server takes"),
        ({"command": "x", "env": {"1A": "v"}}, "not a variable name"),
        ({"command": "x", "cwd": "/"}, "cwd"),
    ]:
        with pytest.raises(ValueError, match=says):
            McpServerSpec.model_validate(bad)


def test_references_resolve_from_a_lookup_and_a_missing_one_is_named_never_its_value():
    env = {"TOKEN": "s3cret", "EMPTY": ""}
    assert expand("Bearer ${TOKEN}", env.get) == "Bearer s3cret"
    assert expand("${EMPTY:-fallback} ${NONE:-x}", env.get) == "fallback x"
    with pytest.raises(MissingVariable) as e:
        expand("${NOPE}", env.get)
    assert e.value.name == "NOPE"


def test_settings_files_and_mcp_json_hold_servers_with_errors_at_their_line():
    s = parse_settings(
        '{"mcpServers": {"fs": {"command": "npx"}}, "enabledMcpjsonServers": ["gh"]}', "u.json"
    )
    assert list(s.mcp_servers) == ["fs"] and s.enabled_mcpjson_servers == ["gh"]
    assert list(
        parse_mcp_json(
            '{"mcpServers": {"gh": {"type": "http", "url": "https://x/mcp"}}}', ".mcp.json"
        )
    ) == ["gh"]
    with pytest.raises(
        SettingsError, match=r"u.json:2:\d+: unknown field 'cmd' at mcpServers.fs.cmd"
    ):
        parse_settings('{"mcpServers":\n {"fs": {"cmd": "npx"}}}', "u.json")
    with pytest.raises(SettingsError, match="MCP server name 'a__b' is not valid"):
        parse_mcp_json('{"mcpServers": {"a__b": {"command": "x"}}}', ".mcp.json")


def test_a_direct_config_may_name_an_mcp_tool_but_not_a_server():
    assert config_problems({"tool": "mcp__fs__read_file", "path": "x"}) == []
    assert "does not name a tool of an MCP server" in config_problems({"tool": "mcp__fs"})[0]


# -- discovery ----------------------------------------------------------------------------------


def test_a_discovery_holds_for_the_run_or_for_the_servers_ttl_and_one_configuration():
    offer = McpDiscovery(server="fs", config_digest="a", discovered_at=1000.0, naming=NAMING)
    assert offer.fresh(10**9, "a") and not offer.fresh(1001, "b")
    timed = offer.model_copy(update={"ttl_ms": 5000})
    assert timed.fresh(1004.9, "a") and not timed.fresh(1005.1, "a")


def test_a_tool_keeps_its_servers_schema_and_annotations():
    (info,), _ = tool_infos(
        "fs",
        [
            {
                "name": "rm",
                "description": "remove",
                "inputSchema": {
                    "type": "object",
                    "properties": {"p": {"type": "string"}},
                    "required": ["p"],
                },
                "annotations": {"destructiveHint": True},
            }
        ],
    )
    assert info.hint == "destructive" and not info.read_only
    fn = function(info)["function"]
    assert fn["name"] == "mcp__fs__rm" and fn["parameters"]["required"] == ["p"]
    assert schema_problem(info.input_schema, {}) == "arguments: 'p' is a required property"
    assert schema_problem(info.input_schema, {"p": "x"}) is None
    assert schema_problem({"type": "nonsense"}, {}) is None  # the server judges what we cannot


# -- rules, roles, modes ------------------------------------------------------------------------


def test_mcp_rules_name_a_server_or_a_tool_without_arguments():
    assert parse_rule("mcp__fs").tool == "mcp__fs" and parse_rule("mcp__*").tool == "mcp__*"
    for bad in ("mcp__fs(path)", "mcp__a.b", "mcp__fs__a.b"):
        with pytest.raises(ValueError):
            parse_rule(bad)


@pytest.mark.parametrize(
    "tool,settings,effect,why",
    [
        ("mcp__fs__read_file", None, "allow", "role dev lists mcp__fs__read_file in allowedTools"),
        ("mcp__gh__create_issue", None, "ask", "requestedTools"),
        ("mcp__gh__delete_repo", None, "deny", "may not use"),
        ("mcp__fs__read_file", rules(deny=["mcp__fs"]), "deny", "deny rule 'mcp__fs'"),
        ("mcp__fs__read_file", rules(ask=["mcp__fs__read_file"]), "ask", "ask rule"),
        ("mcp__gh__delete_repo", rules(allow=["mcp__gh"]), "allow", "allow rule 'mcp__gh'"),
        ("mcp__gh__delete_repo", rules(allow=["mcp__*"]), "allow", "allow rule 'mcp__*'"),
        ("mcp__fs__delete", None, "ask", "destructiveHint"),
        ("mcp__fs__delete", rules(allow=["mcp__fs__delete"]), "allow", "allow rule"),
        ("mcp__fs__read", rules(deny=["mcp__fs__read"]), "deny", "deny rule"),
        ("mcp__fs__write", rules(mode="plan"), "deny", "read-only tools only"),
        ("mcp__fs__read", rules(mode="plan"), "allow", "allowedTools"),
        ("mcp__fs__delete", rules(mode="bypass"), "allow", "bypass"),
        ("mcp__fs__delete", rules(mode="bypass", deny=["mcp__fs"]), "deny", "deny rule"),
    ],
)
def test_mcp_tools_are_decided_by_the_same_rules_roles_and_modes(tool, settings, effect, why):
    decision = d(tool, settings=settings)
    assert decision.effect == effect and why in decision.reason, decision


def test_rules_of_the_run_allow_an_mcp_tool_only_for_a_role_that_holds_it():
    given = PermissionSettings(run_rules=["mcp__gh__create_issue", "mcp__gh__delete_repo"])
    settings = trusted_settings(rules(), given)
    assert d("mcp__gh__create_issue", settings=settings).effect == "allow"
    assert d("mcp__gh__delete_repo", settings=settings).effect == "deny"
    assert approval_shaped("mcp__gh__create_issue") and not approval_shaped("mcp__gh")
    assert not approval_shaped("mcp__*") and run_rules_for("mcp__gh__create_issue", {"a": 1}) == [
        "mcp__gh__create_issue"
    ]
    person = PermissionSettings(
        approved_rules=[ApprovedRule(rule="mcp__gh__create_issue", request_id="A-1")]
    )
    assert (
        "request A-1"
        in d("mcp__gh__create_issue", settings=trusted_settings(rules(), person)).reason
    )


def test_roles_hold_servers_and_tools_and_a_plan_may_only_narrow_them():
    assert role_problems(FS) == []
    bad = RoleCapabilityModel(name="x", allowed_tools=["mcp__a.b", "mcp_thing"])
    problems = role_problems(bad)
    assert any("does not name an MCP server" in p for p in problems)
    assert any("unknown allowedTools mcp_thing" in p for p in problems)
    narrowed = FS.model_copy(
        update={"allowed_tools": ["mcp__fs__read_file"], "requested_tools": []}
    )
    assert plan_role_problems([narrowed], {"dev": FS}) == []
    widened = FS.model_copy(update={"allowed_tools": ["mcp__gh"]})
    assert "gives the role dev mcp__gh" in plan_role_problems([widened], {"dev": FS})[0]
    assert trusted_role(narrowed, FS).allowed_tools == ["mcp__fs__read_file"]
    assert (
        trusted_role(FS.model_copy(update={"allowed_tools": ["mcp__fs"]}), narrowed).allowed_tools
        == []
    )


def test_a_role_the_worker_does_not_know_gets_mcp_tools_only_from_a_person():
    invented = RoleCapabilityModel(name="new", allowed_tools=["mcp__fs", "file_read"])
    assert effective_roles([invented], {}, approved=False)["new"].requested_tools == ["mcp__fs"]
    assert person_only_tools(invented, None) == ["mcp__fs"]
    trusted = trusted_role(invented, None)
    settings = rules(allow=["mcp__fs"]).model_copy(update={"person_only_tools": ["mcp__fs"]})
    decision = decide("mcp__fs__read", {}, trusted, settings, WS)
    assert decision.effect == "ask" and decision.hard


def test_an_agent_gets_the_servers_its_role_or_the_workers_rules_name(tmp_path):
    role = RoleCapabilityModel(
        name="r", allowed_tools=["mcp__fs__read"], requested_tools=["mcp__gh"]
    )
    gate = Gate(
        task_id="T-1",
        permissions=rules(allow=["mcp__db__query"], ask=["mcp__w*"]),
        approvals=[],
        role=role,
        workspace=tmp_path,
    )
    assert wanted(role, gate, ["fs", "gh", "db", "web", "other"]) == ["fs", "gh", "db", "web"]
    run_only = PermissionSettings(run_rules=["mcp__other__x"])
    gate = Gate(
        task_id="T-1",
        permissions=trusted_settings(rules(), run_only),
        approvals=[],
        role=role,
        workspace=tmp_path,
    )
    assert wanted(role, gate, ["other"]) == []  # a run's rule never gives a role a tool it lacks


# -- a project's servers: what the user's settings grant them -----------------------------------


def test_grants_are_read_strictly_from_the_user_settings():
    s = parse_settings(
        '{"mcpServerGrants": {"gh": {"secrets": ["GITHUB_TOKEN"], '
        '"hosts": ["api.github.com", "127.0.0.1:8080", "[::1]:9000"]}}}',
        "u.json",
    )
    grant = s.mcp_server_grants["gh"]
    assert grant.secrets == ["GITHUB_TOKEN"]
    assert grant.patterns() == ["api.github.com", "127.0.0.1:8080", "[::1]:9000"]
    for bad, says in [
        (
            '{"mcpServerGrants": {"gh": {"secret": []}}}',
            "unknown field 'secret' .*known here: secrets",
        ),
        ('{"mcpServerGrants": {"gh": {"secrets": ["A-B"]}}}', "'A-B' is not a variable name"),
        ('{"mcpServerGrants": {"gh": {"hosts": ["127.0.0.1"]}}}', "name the port"),
        ('{"mcpServerGrants": {"gh": {"hosts": ["https://x/y"]}}}', "is not a host"),
        ('{"mcpServerGrants": {"a__b": {}}}', "MCP server name 'a__b' is not valid"),
    ]:
        with pytest.raises(SettingsError, match=says):
            parse_settings(bad, "u.json")


def project(spec: dict, **grant: list[str]) -> ServerEntry:
    return ServerEntry(
        "gh",
        McpServerSpec.model_validate(spec),
        "project /p/.mcp.json",
        project=True,
        grant=McpServerGrant(**grant),
        user_settings="/root/.xsky/settings.json",
    )


def test_a_project_server_gets_a_secret_only_when_the_user_grants_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path
):
    monkeypatch.setenv("XSKY_TEST_GRANTED", "granted-value-1")
    spec = {"command": "srv", "env": {"T": "${XSKY_TEST_GRANTED}", "W": "${XSKY_WORKSPACE}"}}
    with pytest.raises(McpConfigError) as e:
        resolve(project(spec), tmp_path)
    assert str(e.value) == (
        "MCP server gh (project /p/.mcp.json) refers to ${XSKY_TEST_GRANTED}, which a project's "
        'server gets only when the worker\'s settings grant it: add "XSKY_TEST_GRANTED" to '
        "mcpServerGrants.gh.secrets in /root/.xsky/settings.json"
    )
    launch = resolve(project(spec, secrets=["XSKY_TEST_GRANTED"]), tmp_path)
    assert launch.env == {"T": "granted-value-1", "W": str(tmp_path)}
    # the user's own server is trusted as before
    user = ServerEntry("gh", McpServerSpec.model_validate(spec), "user settings (u.json)")
    assert resolve(user, tmp_path).env["T"] == "granted-value-1"


def test_a_project_http_server_must_be_at_a_granted_host_and_reaches_only_those(tmp_path):
    spec = {"type": "http", "url": "https://mcp.example.com/mcp"}
    with pytest.raises(McpConfigError, match=r'add "mcp.example.com" to mcpServerGrants.gh.hosts'):
        resolve(project(spec, hosts=["api.example.com"]), tmp_path)
    local = {"type": "http", "url": "http://127.0.0.1:7000/mcp"}
    with pytest.raises(McpConfigError, match=r'add "127.0.0.1:7000" to mcpServerGrants'):
        resolve(project(local, hosts=["127.0.0.1:7001"]), tmp_path)
    assert resolve(project(spec, hosts=["example.com"]), tmp_path).url.endswith("/mcp")
    entry = project(spec, hosts=["example.com", "127.0.0.1:7000"])
    base = Place(tmp_path, None, None, Policy(allow=None, deny=["evil.example.com"]))
    place = base.for_entry(entry)
    assert place.web is not None and place.command_network is not None
    assert place.web.check_name("mcp.example.com", 443) is None
    assert place.web.check_name("127.0.0.1", 7000) is None
    assert "not among the domains" in (place.web.check_name("pypi.org", 443) or "")
    assert "denied" in (place.web.check_name("evil.example.com", 443) or "")
    assert base.for_entry(project(spec)).command_network is None  # nothing granted: no network
    assert base.for_entry(entry).key() != base.key()


def test_an_mcp_tool_a_role_lacks_is_refused_with_how_to_give_it() -> None:
    from xsky.security.permissions import PermissionSettings, decide
    from xsky.security.roles import BUILTIN_ROLES

    decision = decide(
        "mcp__fs__list_directory", {"path": "."}, BUILTIN_ROLES["file"], PermissionSettings()
    )
    assert decision.effect == "deny"
    assert 'an allow rule "mcp__fs" to permissions' in decision.reason
    assert "add mcp__fs (the server's tools) or mcp__fs__list_directory" in decision.reason


def test_server_names_cannot_make_two_servers_tools_one_name() -> None:
    """Servers `a` and `a_`: a's tool `_b` and a_'s tool `b` were both `mcp__a___b`, and a role
    holding mcp__a held every tool of a_ (a second security review)."""
    from xsky.security.mcp import SERVER_RE, covers, entry_problem

    assert not SERVER_RE.match("a_") and not SERVER_RE.match("a__b")
    assert SERVER_RE.match("a_b") and SERVER_RE.match("github")
    assert entry_problem("mcp__a_") is not None
    assert covers("mcp__a", "mcp__a__b") and covers("mcp__a", "mcp__a___b")  # a's own _b
    assert not covers("mcp__a", "mcp__ab__c") and not covers("mcp__a", "mcp__b__a")


def test_a_tool_that_says_it_only_reads_and_destroys_is_taken_for_destructive() -> None:
    from xsky.security.mcp import tool_infos

    infos, _ = tool_infos(
        "s",
        [{"name": "wipe", "annotations": {"readOnlyHint": True, "destructiveHint": True}}],
    )
    (info,) = infos
    assert info.destructive and not info.read_only


def test_a_tool_whose_schema_would_flood_every_request_is_not_offered() -> None:
    """A description is cut at 1,024 characters, but the input schema went to the model whole
    on every turn: a server could put 100 MB of instructions there (a second review)."""
    from xsky.security.mcp import MAX_SCHEMA, MAX_TOOLS, tool_infos

    big = {
        "type": "object",
        "properties": {"x": {"type": "string", "description": "y" * MAX_SCHEMA}},
    }
    infos, refused = tool_infos("s", [{"name": "big", "inputSchema": big}, {"name": "ok"}])
    assert [i.tool for i in infos] == ["ok"]
    assert "its tool 'big' is not offered: its input schema is" in refused[0]
    many = [{"name": f"t{i}"} for i in range(MAX_TOOLS + 5)]
    infos, refused = tool_infos("s", many)
    assert (
        len(infos) == MAX_TOOLS and f"5 of its {MAX_TOOLS + 5} tools are not offered" in refused[0]
    )
