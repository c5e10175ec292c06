"""Hosts the starter opens for one run (--allow-host, RunOptions.allow_hosts): what may be
named, one port at a time for local hosts, and what a refusal says to do."""

from __future__ import annotations

import argparse

import pytest

from activities.sandbox import egress, temporal_ports
from cli.runs_cmd import run_options
from xsky.errors import UsageError
from xsky.plan.models import RoleCapabilityModel
from xsky.security.allow_hosts import host_rule, how_to_open
from xsky.security.permissions import (
    PermissionLayer,
    PermissionSettings,
    decide,
    trusted_settings,
)

NO_TEMPORAL = temporal_ports.Endpoints()
SHELL = RoleCapabilityModel(name="shell", allowed_tools=["shell"])


@pytest.mark.parametrize(
    "text, rule",
    [
        ("127.0.0.1:8080", "network(domain:127.0.0.1:8080)"),
        ("localhost:3000", "network(domain:localhost:3000)"),
        ("[::1]:3000", "network(domain:[::1]:3000)"),
        ("10.0.0.5:5432", "network(domain:10.0.0.5:5432)"),
        (" Docs.Python.org ", "network(domain:docs.python.org)"),
    ],
)
def test_a_host_becomes_one_network_rule(text, rule):
    assert host_rule(text) == rule


@pytest.mark.parametrize(
    "text, why",
    [
        ("127.0.0.1", "name the port, e.g. 127.0.0.1:8080"),
        ("localhost", "name the port, e.g. localhost:8080"),
        ("[::1]", "name the port, e.g. [::1]:8080"),
        ("10.1.2.3", "name the port"),
        ("::1", "write an IPv6 address in brackets"),
        ("*.example.com", "no scheme, path or wildcard"),
        ("http://127.0.0.1:8080", "no scheme, path or wildcard"),
        ("127.0.0.1:0", "not a number from 1 to 65535"),
        ("169.254.169.254:80", "no rule can open it"),
        ("metadata.google.internal:80", "no rule can open it"),
        ("", "is not a host"),
    ],
)
def test_a_pattern_a_metadata_host_or_a_local_host_without_its_port_is_refused(text, why):
    with pytest.raises(ValueError) as e:
        host_rule(text)
    assert why in str(e.value)


def opened(*hosts: str, given: PermissionSettings | None = None) -> PermissionSettings:
    return trusted_settings(PermissionSettings(), given or PermissionSettings(), hosts)


def test_a_host_with_a_port_opens_that_port_only_for_the_browser_http_get_and_commands():
    web, commands = egress.policies(opened("127.0.0.1:8080"), "/home/me/.xsky/settings.json")
    assert commands is not None
    assert web.check_address("127.0.0.1", "127.0.0.1", 8080, NO_TEMPORAL) is None
    assert commands.check_name("127.0.0.1", 8080) is None
    assert commands.check_address("127.0.0.1", "127.0.0.1", 8080, NO_TEMPORAL) is None
    for policy in (web, commands):
        refused = policy.check_address("127.0.0.1", "127.0.0.1", 8081, NO_TEMPORAL) or ""
        assert "loopback" in refused
        assert "--allow-host 127.0.0.1:8081" in refused
        assert '"network(domain:127.0.0.1:8081)"' in refused
        assert "/home/me/.xsky/settings.json" in refused
    assert web.check_address("localhost", "127.0.0.1", 8080, NO_TEMPORAL) is not None


def test_a_rule_without_a_port_never_opens_a_loopback_or_private_address():
    # What a settings file may hold (--allow-host refuses it for a local host): the host
    # on web ports, public addresses only.
    settings = PermissionSettings(
        layers=[PermissionLayer(scope="user", allow=["network(domain:127.0.0.1)"])]
    )
    web, commands = egress.policies(settings)
    assert commands is not None
    for policy in (web, commands):
        for port in (80, 8080):
            assert "loopback" in (
                policy.check_address("127.0.0.1", "127.0.0.1", port, NO_TEMPORAL) or ""
            )


def test_only_the_runs_options_open_hosts_not_its_input_rules_or_a_forged_host_rules_field():
    forged = PermissionSettings(
        run_rules=["network(domain:127.0.0.1:8080)", "http_get(domain:127.0.0.1:8080)"],
        host_rules=["network(domain:127.0.0.1:8080)"],
    )
    web, commands = egress.policies(trusted_settings(PermissionSettings(), forged))
    assert commands is None
    assert web.check_address("127.0.0.1", "127.0.0.1", 8080, NO_TEMPORAL) is not None
    kept = opened("127.0.0.1:8080", "*", "127.0.0.1", "nonsense((", given=forged).host_rules
    assert kept == ["network(domain:127.0.0.1:8080)"]


def test_a_command_naming_an_opened_host_on_another_port_is_refused_with_the_fix():
    settings = opened("127.0.0.1:8080")
    allowed = decide("shell", {"command": "curl -s http://127.0.0.1:8080/"}, SHELL, settings, "/w")
    assert allowed.effect == "allow"
    assert (
        decide("shell", {"command": "cat < /dev/tcp/127.0.0.1/8080"}, SHELL, settings, "/w").effect
        == "allow"
    )
    for command in ("curl -s http://127.0.0.1:9999/", "cat < /dev/tcp/127.0.0.1/9999"):
        refused = decide("shell", {"command": command}, SHELL, settings, "/w")
        assert refused.effect == "deny" and refused.hard
        assert "port 9999 is not among those opened for it (8080)" in refused.reason
        assert "--allow-host 127.0.0.1:9999" in refused.reason
    unopened = decide("shell", {"command": "curl http://10.0.0.5:5432/"}, SHELL, opened(), "/w")
    assert "--allow-host 10.0.0.5:5432" in unopened.reason
    assert "~/.xsky/settings.json" in unopened.reason


def test_the_fix_names_the_flag_the_rule_and_the_settings_file():
    assert how_to_open("127.0.0.1", 8080, "/srv/u/.xsky/settings.json") == (
        "to allow it for one run, start the run with --allow-host 127.0.0.1:8080 "
        "(RunOptions(allow_hosts=['127.0.0.1:8080']) in Python); for every run, add "
        '"network(domain:127.0.0.1:8080)" to "permissions": {"allow": [...]} in the '
        "worker's settings, /srv/u/.xsky/settings.json"
    )
    assert "--allow-host [::1]:3000" in how_to_open("::1", 3000)


def test_the_flag_is_repeatable_and_a_bad_host_is_a_usage_error():
    args = argparse.Namespace(allow_host=["127.0.0.1:8080", "docs.python.org"])
    assert run_options(args).allow_hosts == ["127.0.0.1:8080", "docs.python.org"]
    with pytest.raises(UsageError, match=r"--allow-host 127\.0\.0\.1: .*name the port"):
        run_options(argparse.Namespace(allow_host=["127.0.0.1"]))


def test_a_rule_for_a_name_does_not_open_this_machines_loopback():
    """`--allow-host api.partner.example:8443` opened whatever the name resolved to, this
    machine's loopback too: the name's owner could point it at 127.0.0.1 (DNS rebinding) and
    reach a local service on that port. A private LAN address stays open to a name (that is
    what `docs.internal:443` is for); loopback opens only to a rule that names it."""
    web, commands = egress.policies(opened("api.partner.example:8443"))
    assert commands is not None
    for policy in (web, commands):
        # 0.0.0.0 and :: land on this machine too (a connect to them is one to localhost)
        for ip in ("127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::"):
            refused = policy.check_address("api.partner.example", ip, 8443, NO_TEMPORAL) or ""
            assert "does not open this machine's loopback" in refused, (ip, refused)
        assert policy.check_address("api.partner.example", "10.0.0.7", 8443, NO_TEMPORAL) is None
        assert policy.check_address("api.partner.example", "203.0.114.9", 8443, NO_TEMPORAL) is None
    web, _ = egress.policies(opened("localhost:8080"))
    assert web.check_address("localhost", "127.0.0.1", 8080, NO_TEMPORAL) is None
