"""The worker's own checks behind the sandbox: which addresses the egress proxy refuses
(this machine's own, Temporal's four ports, non-web ports for commands), which workspaces a
run may name, and which "approvals" a run's input may carry."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from activities.sandbox import egress
from activities.sandbox.confine import workspace_problem
from xsky.config import Settings, load_settings, server_ports
from xsky.permissions import PermissionSettings, approval_shaped, trusted_settings


def own_addresses() -> list[str]:
    """This machine's non-loopback addresses (none on a machine with only loopback)."""
    found = set()
    for info in socket.getaddrinfo(socket.gethostname(), None):
        found.add(info[4][0])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            found.add(s.getsockname()[0])
        except OSError:
            pass
    return sorted(a for a in found if not a.startswith(("127.", "::1")) and "%" not in a)


def test_the_proxy_refuses_this_machines_addresses_and_the_unspecified_ones():
    policy = egress.Policy()
    for ip in ["0.0.0.0", "::", "127.0.0.1", "127.9.9.9", "::1", *own_addresses()]:
        reason = policy.check_address(ip, ip, 8080)
        assert reason is not None, ip
    assert policy.check_address("example.com", "93.184.215.14", 443) is None
    assert egress.this_machine("127.0.0.1") and not egress.this_machine("93.184.215.14")
    assert all(
        egress.this_machine(ip) for ip in own_addresses()
    )  # even were they public, they are refused


def test_a_named_local_host_is_allowed_but_never_on_temporals_ports(monkeypatch):
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:17233")
    monkeypatch.setenv("XSKY_UI_URL", "http://localhost:18999")
    egress._temporal_endpoints.cache_clear()
    try:
        web, _ = egress.policies(PermissionSettings(run_rules=["http_get(domain:127.0.0.1)"]))
        assert web.check_address("127.0.0.1", "127.0.0.1", 5000) is None  # named: the demo's site
        for port in (
            *server_ports(17233),
            18999,
        ):  # gRPC, Web UI, HTTP API, metrics, the configured UI
            assert "Temporal server" in (web.check_address("127.0.0.1", "127.0.0.1", port) or ""), (
                port
            )
            for ip in ("0.0.0.0", *own_addresses()):
                assert "Temporal server" in (web.check_address(ip, ip, port) or ""), (ip, port)
    finally:
        egress._temporal_endpoints.cache_clear()


def test_commands_reach_allowed_domains_on_web_ports_only_unless_the_host_is_named():
    _, commands = egress.policies(PermissionSettings(run_rules=[]))
    assert commands is None  # no network rule: no network at all
    settings = PermissionSettings.model_validate(
        {
            "layers": [
                {
                    "path": "t",
                    "scope": "user",
                    "allow": ["network(domain:*.example.com)", "network(domain:db.internal)"],
                }
            ]
        }
    )
    _, commands = egress.policies(settings)
    assert commands is not None
    assert (
        commands.check_name("api.example.com", 443) is None
        and commands.check_name("api.example.com", 80) is None
    )
    assert "not a web port" in commands.check_name("mail.example.com", 25)
    assert "not a web port" in commands.check_name("api.example.com", 22)
    assert commands.check_name("db.internal", 5432) is None  # a host a rule names exactly
    assert "not among the domains" in commands.check_name("evil.com", 443)


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *a):
        pass


async def test_through_the_real_proxy_loopback_is_refused_and_a_named_host_is_served():
    site = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    Thread(target=site.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{site.server_address[1]}/"
    decisions: list[tuple[str, str, str]] = []
    try:
        for named, expected in ((False, 403), (True, 200)):
            policy = egress.Policy(named=["127.0.0.1"] if named else [])
            async with egress.serving(policy, lambda *d: decisions.append(d)) as proxy:
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))

                def fetch(opener: urllib.request.OpenerDirector) -> int:
                    try:
                        return opener.open(url, timeout=10).status
                    except urllib.error.HTTPError as e:
                        return e.code

                assert await asyncio.to_thread(fetch, opener) == expected
    finally:
        site.shutdown()
    assert [d[1] for d in decisions] == ["deny", "allow"] and "loopback" in decisions[0][2]


@pytest.fixture
def settings(tmp_path: Path, monkeypatch) -> Settings:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "skills-home"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "project"))
    return load_settings()


@pytest.mark.parametrize(
    "where",
    [
        "/",
        "/etc",
        "/usr",
        "HOME",
        "HOME_PARENT",
        "STATE",
        "STATE/artifacts",
        "STATE/runs/other/workspace",
        "STATE_PARENT",
        "SKILLS/library",
        "PROJECT/.xsky",
    ],
)
def test_a_run_may_not_name_the_system_the_home_or_xskys_state_as_its_workspace(
    settings, tmp_path, where
):
    path = (
        where.replace("HOME_PARENT", str(Path.home().parent))
        .replace("HOME", str(Path.home()))
        .replace("STATE_PARENT", str(tmp_path))
        .replace("STATE", str(tmp_path / "state"))
        .replace("SKILLS", str(tmp_path / "skills-home"))
        .replace("PROJECT", str(tmp_path / "project"))
    )
    assert workspace_problem(Path(path), settings, "run-1") is not None


def test_the_default_workspace_and_a_folder_of_its_own_are_fine(settings, tmp_path):
    assert workspace_problem(settings.runs / "run-1" / "workspace", settings, "run-1") is None
    assert workspace_problem(tmp_path / "elsewhere" / "project", settings, "run-1") is None
    assert (
        workspace_problem(settings.runs / "run-2" / "workspace", settings, "run-1") is not None
    )  # another run's


def test_a_runs_input_carries_only_approval_shaped_rules():
    given = PermissionSettings(
        run_rules=[
            "shell",
            "shell(curl:*)",
            "shell(=make test)",
            "file_write",
            "file_write(=out.txt)",
            "http_get(domain:*)",
            "http_get(domain:*.evil.com)",
            "http_get(domain:127.0.0.1)",
            "file_read",
            "not a rule((",
            "browser_navigate(domain:docs.python.org)",
        ]
    )
    kept = trusted_settings(PermissionSettings(), given).run_rules
    assert kept == [
        "shell(=make test)",
        "file_write(=out.txt)",
        "http_get(domain:127.0.0.1)",
        "file_read",
        "browser_navigate(domain:docs.python.org)",
    ]
    assert not approval_shaped("python_exec") and approval_shaped("code_search")
