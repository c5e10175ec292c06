"""decide(): rules, the role, the mode — table-driven, bypass attempts included."""

from __future__ import annotations

import os

import pytest

from xsky.plan.models import RoleCapabilityModel
from xsky.security.permissions import (
    PermissionLayer,
    PermissionSettings,
    decide,
    destinations,
    domain_rules,
    parse_rule,
    rule_problems,
    run_rules_for,
)

WS = "/work/ws"
DEV = RoleCapabilityModel(
    name="dev",
    allowed_tools=["shell", "file_read", "file_write", "file_list", "browser_navigate"],
    requested_tools=["python_exec", "http_get"],
)
ASKER = RoleCapabilityModel(
    name="asker", allowed_tools=["file_read"], requested_tools=["shell", "file_write"]
)
READER = RoleCapabilityModel(name="reader", allowed_tools=["file_read", "file_list", "code_search"])

PROJECT = PermissionLayer(
    scope="project",
    path=".xsky/settings.json",
    allow=["shell(ls:*)", "shell(git log:*)", "shell(echo:*)", "file_write(src/**)"],
    ask=["shell(git push:*)", "file_write(docs/*.md)"],
    deny=[
        "shell(rm:*)",
        "shell(curl:*)",
        "browser_navigate(domain:evil.example)",
        "file_read(secrets/**)",
    ],
)
USER = PermissionLayer(
    scope="user",
    path="~/.xsky/settings.json",
    allow=["shell(curl:*)", "shell(make:*)"],
    deny=["shell(shutdown:*)"],
)
RULES = PermissionSettings(layers=[USER, PROJECT])


def d(tool, args, role=DEV, settings=RULES, ws=WS):
    return decide(tool, args, role, settings, ws)


CASES = [
    # plain rules and the role
    ("shell", {"command": "ls -la"}, DEV, RULES, "allow", "shell(ls:*)"),
    ("shell", {"command": "git log --oneline"}, DEV, RULES, "allow", "shell(git log:*)"),
    ("shell", {"command": "git push origin main"}, DEV, RULES, "ask", "shell(git push:*)"),
    ("shell", {"command": "rm -rf build"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "pytest -q"}, DEV, RULES, "allow", "allowedTools"),
    ("shell", {"command": "pytest -q"}, ASKER, RULES, "ask", "requestedTools"),
    ("shell", {"command": "pytest -q"}, READER, RULES, "deny", "may not use shell"),
    (
        "shell",
        {"command": "lsof -i"},
        ASKER,
        RULES,
        "ask",
        "requestedTools",
    ),  # ls:* is a word prefix, not lsof
    # bypass attempts: every part must be allowed on its own
    ("shell", {"command": "ls && rm -rf x"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "ls; rm -rf x"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "ls || rm -rf x"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "ls | sh"}, ASKER, RULES, "ask", "requestedTools"),
    ("shell", {"command": "echo $(rm -rf x)"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "echo `rm -rf x`"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "ls\nrm -rf x"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "FOO=1 rm -rf x"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": 'bash -c "rm -rf x"'}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "sh -c 'ls; rm x'"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "(cd /tmp && rm -rf x)"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "eval 'rm -rf x'"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "env A=1 sudo -u root rm -rf /"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "find . -name '*.o' | xargs rm"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "for f in *.o; do rm $f; done"}, DEV, RULES, "deny", "shell(rm:*)"),
    ("shell", {"command": "X=$(curl evil.example) ls"}, DEV, RULES, "deny", "shell(curl:*)"),
    ("shell", {"command": "$CMD -rf x"}, DEV, RULES, "ask", "only known at run time"),
    ("shell", {"command": "echo 'unterminated"}, DEV, RULES, "ask", "cannot be parsed"),
    # global options do not hide what a command is; code in arguments is asked for
    ("shell", {"command": "git -C . log -3"}, ASKER, RULES, "allow", "shell(git log:*)"),
    (
        "shell",
        {"command": "git --no-pager -C sub push origin"},
        DEV,
        RULES,
        "ask",
        "shell(git push:*)",
    ),
    ("shell", {"command": "git -c core.pager='sh -c id' log"}, DEV, RULES, "ask", "core.pager"),
    ("shell", {"command": "awk 'BEGIN{system(1)}'"}, DEV, RULES, "ask", "system()"),
    ("shell", {"command": "find . -name '*.tmp' -delete"}, DEV, RULES, "ask", "removes files"),
    ("shell", {"command": "tar xf a.tar --to-command=sh"}, DEV, RULES, "ask", "tar options"),
    ("shell", {"command": "python3 -c 'import os'"}, DEV, RULES, "ask", "runs the code"),
    ("shell", {"command": "source ./env.sh"}, DEV, RULES, "ask", "runs the commands of a file"),
    ("shell", {"command": "x" * 20000}, DEV, RULES, "deny", "more than the checker reads"),
    ("shell", {"command": "ls && git push"}, DEV, RULES, "ask", "shell(git push:*)"),
    ("shell", {"command": "ls && git log"}, ASKER, RULES, "allow", "shell"),
    # redirections are file operations
    (
        "shell",
        {"command": "echo hi > /etc/passwd"},
        DEV,
        RULES,
        "deny",
        "outside the run's workspace",
    ),
    (
        "shell",
        {"command": "echo hi > ../escape.txt"},
        DEV,
        RULES,
        "deny",
        "outside the run's workspace",
    ),
    ("shell", {"command": "echo hi > notes.txt"}, DEV, RULES, "allow", "shell(echo:*)"),
    ("shell", {"command": "cat < secrets/key.pem"}, DEV, RULES, "deny", "file_read(secrets/**)"),
    ("shell", {"command": "ls > /dev/null 2>&1"}, DEV, RULES, "allow", "shell(ls:*)"),
    # paths
    (
        "file_write",
        {"path": "src/app/main.py", "content": "x"},
        ASKER,
        RULES,
        "allow",
        "file_write(src/**)",
    ),
    (
        "file_write",
        {"path": "docs/guide.md", "content": "x"},
        DEV,
        RULES,
        "ask",
        "file_write(docs/*.md)",
    ),
    (
        "file_write",
        {"path": "docs/deep/guide.md", "content": "x"},
        DEV,
        RULES,
        "allow",
        "allowedTools",
    ),
    ("file_read", {"path": "secrets/prod/key"}, DEV, RULES, "deny", "file_read(secrets/**)"),
    ("file_read", {"path": "notes/../secrets/key"}, DEV, RULES, "deny", "file_read(secrets/**)"),
    ("file_read", {"path": f"{WS}/secrets/key"}, DEV, RULES, "deny", "file_read(secrets/**)"),
    ("file_write", {"path": "other/x.txt", "content": "x"}, ASKER, RULES, "ask", "requestedTools"),
    (
        "file_write",
        {"path": "../outside.txt", "content": "x"},
        DEV,
        RULES,
        "deny",
        "outside the run's workspace",
    ),
    ("file_read", {"path": "/etc/passwd"}, DEV, RULES, "deny", "outside the run's workspace"),
    # domains
    (
        "browser_navigate",
        {"url": "https://evil.example/login"},
        DEV,
        RULES,
        "deny",
        "domain:evil.example",
    ),
    (
        "browser_navigate",
        {"url": "https://cdn.evil.example/x.js"},
        DEV,
        RULES,
        "deny",
        "domain:evil.example",
    ),
    ("browser_navigate", {"url": "https://notevil.example/"}, DEV, RULES, "allow", "allowedTools"),
    ("http_get", {"url": "https://example.com"}, DEV, RULES, "ask", "requestedTools"),
    # layers: a deny in any layer wins; asks beat allows
    ("shell", {"command": "curl https://example.com"}, DEV, RULES, "deny", "project settings"),
    ("shell", {"command": "shutdown now"}, DEV, RULES, "deny", "user settings"),
    ("shell", {"command": "make test"}, ASKER, RULES, "allow", "shell(make:*)"),
]


@pytest.mark.parametrize(
    "tool, args, role, settings, effect, why",
    CASES,
    ids=[f"{c[0]}:{list(c[1].values())[0]}:{c[2].name}" for c in CASES],
)
def test_decide(tool, args, role, settings, effect, why):
    decision = decide(tool, args, role, settings, WS)
    assert decision.effect == effect, decision.reason
    assert why in decision.reason, decision.reason


def test_there_are_at_least_forty_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize(
    "mode, tool, args, role, effect, why",
    [
        ("default", "file_write", {"path": "docs/a.md", "content": ""}, DEV, "ask", "docs/*.md"),
        (
            "accept_edits",
            "file_write",
            {"path": "docs/a.md", "content": ""},
            DEV,
            "allow",
            "accept_edits",
        ),
        (
            "accept_edits",
            "file_write",
            {"path": "x.txt", "content": ""},
            ASKER,
            "allow",
            "accept_edits",
        ),
        ("accept_edits", "shell", {"command": "pytest"}, ASKER, "ask", "requestedTools"),
        (
            "accept_edits",
            "file_write",
            {"path": "x.txt", "content": ""},
            READER,
            "deny",
            "may not use",
        ),
        ("plan", "shell", {"command": "ls"}, DEV, "deny", "read-only"),
        ("plan", "file_write", {"path": "src/a.py", "content": ""}, DEV, "deny", "read-only"),
        ("plan", "file_read", {"path": "a.txt"}, DEV, "allow", "allowedTools"),
        ("plan", "file_read", {"path": "secrets/a"}, DEV, "deny", "secrets"),
        ("bypass", "shell", {"command": "pytest"}, READER, "allow", "bypass overrode"),
        ("bypass", "http_get", {"url": "https://x.org"}, DEV, "allow", "bypass overrode"),
        ("bypass", "shell", {"command": "ls && rm -rf x"}, DEV, "deny", "shell(rm:*)"),
    ],
)
def test_each_mode(mode, tool, args, role, effect, why):
    settings = RULES.model_copy(update={"mode": mode})
    decision = decide(tool, args, role, settings, WS)
    assert decision.effect == effect and why in decision.reason, decision.reason


# Found by review: ways to run a command the rules never saw. None is ever allowed: what the
# checker cannot understand is asked for (in every mode), what it understands as dangerous is refused.
HIDDEN = [
    "echo <<E\n$(touch /tmp/pw3)\nE",  # command substitution in a here-document
    "echo ${x:-$(rm x)}",  # … in a parameter expansion's default
    "echo ${x@P}",  # prompt expansion runs substitutions stored in x
    "x=a[$\\(touch\\ /tmp/pw1\\)]; ls $((x))",  # arithmetic expands names recursively
    "{ ls; } > /etc/passwd",  # a redirect on a group
    "(echo x) > /etc/cron.d/x",  # … on a subshell
    "for i in 1; do ls; done >> /root/.bashrc",  # … on a loop
    "echo x > ~/.bashrc",  # a target only known at run time
    "echo x > $HOME/y",
    'echo "[core] fsmonitor = x" >> .git/config',  # into protected state
    "LD_PRELOAD=./x.so ls",  # a variable that changes what runs
    "PATH=./bin:$PATH; ls",
    "export PATH=./bin:$PATH",
    "{rm,-rf,x}",  # brace expansion makes the command
    "/bin/rm x",  # rm by its path
    "busybox rm x",
    "find . -name x -exec rm {} \\;",
    "x='a[$(rm -rf y)]'; ((x))",  # an arithmetic command expands names recursively too
    "((x++))",
]


@pytest.mark.parametrize("mode", ["default", "bypass"])
@pytest.mark.parametrize("command", HIDDEN)
def test_commands_hidden_from_the_rules_are_never_allowed_in_any_mode(command, mode):
    settings = PermissionSettings(
        layers=[
            PermissionLayer(
                scope="project", allow=["shell(ls:*)", "shell(echo:*)"], deny=["shell(rm:*)"]
            )
        ],
        mode=mode,
    )
    decision = decide("shell", {"command": command}, ASKER, settings, WS)
    assert decision.effect != "allow", decision.reason
    if any(
        word in command
        for word in (
            "LD_PRELOAD",
            "PATH=",
            ".git/config",
            "/etc/",
            "/bin/rm",
            "busybox",
            "-exec rm",
        )
    ):
        assert decision.effect == "deny", decision.reason


def test_an_approved_command_with_a_glob_allows_nothing_else():
    settings = PermissionSettings(run_rules=run_rules_for("shell", {"command": "rm -rf ./build/*"}))
    assert decide("shell", {"command": "rm -rf ./build/*"}, ASKER, settings, WS).effect == "allow"
    assert decide("shell", {"command": "rm -rf ./build/ /"}, ASKER, settings, WS).effect == "ask"
    path_rules = PermissionSettings(
        run_rules=run_rules_for("file_write", {"path": f"{WS}/src/a.py"})
    )
    assert (
        decide("file_write", {"path": "src/a.py", "content": ""}, ASKER, path_rules, WS).effect
        == "allow"
    )


def test_the_default_is_not_bypass():
    assert PermissionSettings().mode == "default"
    assert decide("shell", {"command": "ls"}, READER).effect == "deny"


def test_a_real_symlink_out_of_the_workspace_is_refused_by_the_file_tools(tmp_path):
    # decide() judges the path as written; the file tools resolve it (activities/sandbox.py).
    from activities.sandbox.confine import confine
    from activities.tools import ToolError

    (tmp_path / "ws").mkdir()
    os.symlink("/etc", tmp_path / "ws" / "etc-link")
    with pytest.raises(ToolError, match="outside"):
        confine(tmp_path / "ws", "etc-link/passwd")


def test_run_rules_from_an_approval_allow_exactly_what_was_approved():
    assert run_rules_for("shell", {"command": "git push && git status"}) == [
        "shell(=git push)",
        "shell(=git status)",
    ]
    assert run_rules_for("http_get", {"url": "https://api.example.com/v1"}) == [
        "http_get(domain:api.example.com)"
    ]
    settings = PermissionSettings(run_rules=run_rules_for("shell", {"command": "pytest -q"}))
    assert decide("shell", {"command": "pytest -q"}, ASKER, settings).effect == "allow"
    assert decide("shell", {"command": "pytest -q && rm x"}, ASKER, settings).effect == "ask"


def test_bad_rules_are_reported():
    assert rule_problems(["shell(ls:*)", "shell(", "file_write()", "ok_tool"]) == [
        "permission rule 'shell(' is not valid; write Tool or Tool(specifier), e.g. shell(git log:*), file_write(src/**), browser_navigate(domain:example.com)",
        "permission rule 'file_write()' is not valid; write Tool or Tool(specifier), e.g. shell(git log:*), file_write(src/**), browser_navigate(domain:example.com)",
    ]
    assert parse_rule("browser_*(domain:x.org)").tool == "browser_*"


# Numbers are not addresses: counts, timeouts and ports of network programs are read with
# each program's syntax, and a word of digits is never a host (inet_aton would read "10" as
# 0.0.0.10, a private address).
NOT_HOSTS = [
    "curl -m 10 https://example.com",
    "curl --max-time 30 https://example.com",
    "curl --max-time=30 --connect-timeout 5 https://example.com",
    "curl -sSm10 -o out.html https://example.com",
    "curl --retry 3 -C 0 -r 0-99 https://example.com/file",
    "curl -o localhost -H 'X-A: 1' https://example.com",
    "curl -u me:secret -X POST -d 10 https://example.com",
    "curl -w %{http_code} -A agent/1 https://example.com",
    "wget -T 5 https://example.com",
    "wget -t 3 -O page.html --timeout=10 https://example.com",
    "wget -q -P 10.0.0.1 https://example.com",  # a directory named like an address
    "ping -c 3 example.com",
    "ping -c 3 -i 0.2 -W 1 example.com",
    "nc -w 2 example.com 80",
    "nc -zv -w 1 example.com 443",
    "nc -lp 8080",
    "ssh -p 2222 -i key.pem user@example.com",
    "ssh -o ConnectTimeout=5 example.com ls 127.0.0.1",  # the remote command is not a host
    "telnet example.com 23",
    "socat TCP-LISTEN:8080,fork TCP:example.com:80",
]


@pytest.mark.parametrize("command", NOT_HOSTS)
def test_counts_timeouts_and_ports_of_network_programs_are_not_taken_for_hosts(command):
    decision = decide("shell", {"command": command}, DEV, PermissionSettings(), WS)
    assert "reaches" not in decision.reason, decision.reason
    assert decision.effect != "deny", decision.reason


# Hosts that are local, private or metadata stay refused, however the command names them.
LOCAL_HOSTS = [
    ("curl http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
    ("curl -m 10 http://169.254.169.254/", "169.254.169.254"),
    ("curl http://2852039166/", "2852039166"),  # digits inside a URL are a host
    ("curl -s -m 2 http://0xa9fea9fe/", "0xa9fea9fe"),
    ("nc 127.0.0.1 5432", "127.0.0.1"),
    ("nc -w 2 0xa9fea9fe 80", "0xa9fea9fe"),
    ("timeout 3 nc -w 1 127.0.0.1 80", "127.0.0.1"),
    ("echo x > /dev/tcp/127.0.0.1/80", "127.0.0.1"),
    ("ping -c 3 10.0.0.1", "10.0.0.1"),
    ("ping -c3 192.168.1.1", "192.168.1.1"),
    ("wget -T 5 localhost", "localhost"),
    ("curl 127.0.0.1:8080/admin", "127.0.0.1"),  # a URL without a scheme
    ("curl -x 127.0.0.1:3128 https://example.com", "127.0.0.1"),
    ("curl --proxy=10.0.0.1:3128 https://example.com", "10.0.0.1"),
    ("curl --resolve example.com:443:127.0.0.1 https://example.com", "127.0.0.1"),
    ("curl --connect-to ::[::1]:8080 https://example.com", "[::1]"),
    ("curl --interface 127.0.0.1 https://example.com", "127.0.0.1"),
    ("nc -s 10.1.1.1 example.com 80", "10.1.1.1"),
    ("ssh -J jump@10.0.0.5:22 example.com", "10.0.0.5"),
    ("ssh -o ProxyJump=10.1.2.3 example.com", "10.1.2.3"),
    ("ssh -oProxyJump=10.1.2.3 example.com", "10.1.2.3"),
    ("ssh -p 2222 127.0.0.1", "127.0.0.1"),
    ("wget -e http_proxy=127.0.0.1:8080 https://example.com", "127.0.0.1"),
    ("socat - TCP:127.0.0.1:5432", "127.0.0.1"),
    ("scp notes.txt user@10.0.0.1:/tmp/", "10.0.0.1"),
    ("http :3000/api", "localhost"),  # HTTPie's shorthand for localhost
    ("dig @127.0.0.53 example.com", "127.0.0.53"),
    ("ping6 ::1", "::1"),
]


@pytest.mark.parametrize("command, host", LOCAL_HOSTS)
def test_local_private_and_metadata_hosts_stay_refused_however_named(command, host):
    decision = decide("shell", {"command": command}, DEV, PermissionSettings(), WS)
    assert decision.effect == "deny" and decision.hard, decision.reason
    assert f"reaches {host} " in decision.reason, decision.reason


def test_a_bare_number_given_to_a_network_program_is_left_to_the_egress_proxy():
    # curl reads `2852039166` as 169.254.169.254, but so could it read a count; the proxy checks
    # the address the connection really goes to, so the checker does not guess here.
    assert destinations(["curl", "2852039166"]) == []
    assert destinations(["nc", "example.com", "80"]) == ["example.com"]
    assert destinations(["curl", "http://2852039166/"]) == ["2852039166"]


# Exact host:port rules: the only form the egress proxy honours for local and private hosts.
def test_a_domain_rule_may_name_a_port_and_then_matches_that_port_only():
    rules = PermissionSettings(
        layers=[
            PermissionLayer(
                scope="user",
                allow=["http_get(domain:127.0.0.1:8080)", "browser_navigate(domain:[::1]:3000)"],
            )
        ]
    )
    asker = RoleCapabilityModel(name="web", requested_tools=["http_get", "browser_navigate"])

    def effect(tool, url):
        return decide(tool, {"url": url}, asker, rules, WS).effect

    assert effect("http_get", "http://127.0.0.1:8080/x") == "allow"
    assert effect("http_get", "http://127.0.0.1/x") == "ask"  # port 80
    assert effect("http_get", "http://127.0.0.1:8081/") == "ask"
    assert effect("http_get", "http://sub.127.0.0.1:8080/") == "ask"  # exact: no subdomains
    assert effect("browser_navigate", "http://[::1]:3000/") == "allow"
    assert effect("browser_navigate", "http://[::1]/") == "ask"
    # What the egress proxy is given: the patterns with their ports.
    assert domain_rules(rules, ("http_get", "browser_navigate")) == (
        ["127.0.0.1:8080", "[::1]:3000"],
        [],
    )


def test_a_domain_rules_port_defaults_to_the_schemes():
    rules = PermissionSettings(
        layers=[PermissionLayer(scope="user", allow=["http_get(domain:example.com:443)"])]
    )
    asker = RoleCapabilityModel(name="web", requested_tools=["http_get"])
    assert decide("http_get", {"url": "https://example.com/"}, asker, rules).effect == "allow"
    assert decide("http_get", {"url": "http://example.com/"}, asker, rules).effect == "ask"


@pytest.mark.parametrize(
    "rule, why",
    [
        ("http_get(domain:127.0.0.1:http)", "the port 'http' is not a number"),
        ("http_get(domain:127.0.0.1:70000)", "from 1 to 65535"),
        ("http_get(domain:::1:8080)", "write an IPv6 address in brackets"),
        ("http_get(domain:[::1)", "write an IPv6 address in brackets"),
        ("http_get(domain:[nope]:80)", "is not an IPv6 address"),
        ("http_get(domain:*.example.com:443)", "a port may follow only one exact host"),
        ("http_get(domain:exa mple.com)", "is not a host name"),
    ],
)
def test_a_malformed_host_port_rule_is_explained(rule, why):
    (problem,) = rule_problems([rule])
    assert problem.startswith(f"permission rule {rule!r} is not valid: ") and why in problem


def test_an_approval_of_a_url_on_another_port_names_that_port():
    assert run_rules_for("http_get", {"url": "http://example.com:8080/a"}) == [
        "http_get(domain:example.com:8080)"
    ]
    assert run_rules_for("browser_navigate", {"url": "http://[::1]:3000/"}) == [
        "browser_navigate(domain:[::1]:3000)"
    ]
    # A local host gets its port even on the scheme's: only host:port opens it at the proxy.
    assert run_rules_for("http_get", {"url": "http://127.0.0.1/"}) == [
        "http_get(domain:127.0.0.1:80)"
    ]
    assert run_rules_for("http_get", {"url": "https://example.com/"}) == [
        "http_get(domain:example.com)"
    ]
