"""decide() on hosts: what a network program's arguments name (counts and ports are not hosts,
local and private hosts stay refused however spelled), and ``domain:host:port`` rules."""

from __future__ import annotations

import pytest

from xsky.plan.models import RoleCapabilityModel
from xsky.security.permissions import (
    PermissionLayer,
    PermissionSettings,
    decide,
    destinations,
    domain_rules,
    rule_problems,
    run_rules_for,
)

WS = "/work/ws"
DEV = RoleCapabilityModel(
    name="dev",
    allowed_tools=["shell", "file_read", "file_write", "file_list", "browser_navigate"],
    requested_tools=["python_exec", "http_get"],
)


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
