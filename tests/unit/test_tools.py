"""Direct tools without Temporal: shell, files, http_get, browser, the artifact store."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.sandbox.egress_policy import Policy
from activities.tools import ToolContext, ToolError
from activities.tools.files import file_list, file_read, file_write
from activities.tools.http import http_get
from activities.tools.shell import shell
from activities.tools.web import browser_navigate
from tests.integration.eventually import eventually
from tests.login_site import serving_login_site
from xsky.artifacts import marker


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            state = next(line for line in fh if line.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):  # gone before or while it was read
        return False
    return "Z" not in state.split()[1]


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    beats: list[str] = []
    c = ToolContext(
        "run-1", "a1", ws, ArtifactStore(tmp_path / "artifacts"), BrowserPool(), beats.append
    )
    c.beats = beats  # type: ignore[attr-defined]
    return c


async def test_shell_returns_stdout_and_runs_in_the_workspace(ctx):
    out = await shell(ctx, {"command": "pwd; echo hi"})
    assert out.text == f"{ctx.workspace}\nhi" and out.details["exitCode"] == 0


async def test_shell_nonzero_exit_fails_with_stderr_unless_allowed(ctx):
    with pytest.raises(ToolError, match="exited with status 2") as info:
        await shell(ctx, {"command": "echo oops >&2; exit 2"})
    assert "oops" in str(info.value) and info.value.details["exitCode"] == 2
    out = await shell(ctx, {"command": "exit 2", "allowFailure": True})
    assert out.details["exitCode"] == 2


async def test_shell_values_are_set_as_variables_whole_however_large_and_only_xsky_names(ctx):
    big = (
        "line with 'quotes' and $(touch pwned) \\ and\n" * 8000
    )  # ~370 KiB: past the environment's limit
    out = await shell(
        ctx,
        {
            "command": 'printf %s "${XSKY_V1}" | wc -c; printf %s "${XSKY_V2}"',
            "values": {"XSKY_V1": big, "XSKY_V2": "two\n\n"},
        },
    )
    assert out.text.split("\n")[0] == str(len(big.encode())) and out.text.endswith("two")
    assert not (ctx.workspace / "pwned").exists() and not list(
        Path(tempfile.gettempdir()).glob(f"xsky-values-{os.getpid()}-*")
    )
    for bad in ({"PATH": "/tmp"}, {"LD_PRELOAD": "x"}, {"XSKY_V1": 3}, ["XSKY_V1"]):
        with pytest.raises(ToolError, match="'values' must map names XSKY_V1"):
            await shell(ctx, {"command": "true", "values": bad})


async def test_shell_output_is_capped_with_a_note(ctx):
    out = await shell(
        ctx, {"command": "head -c 5000 /dev/zero | tr '\\0' x", "maxOutputBytes": 1024}
    )
    assert out.text.startswith("x" * 1024) and "3,976 more bytes not shown" in out.text


def running_with(token: str) -> list[int]:
    """Processes (any namespace) whose command line holds ``token``: found by scanning /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:
                continue
            if token in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def none_running(token: str) -> None:
    """Assert that no process holds ``token`` (for ``eventually``: killed ones take a moment)."""
    found = running_with(token)
    assert found == [], f"still running with {token!r}: {found}"


async def test_shell_timeout_kills_the_whole_process_group(ctx):
    start = time.monotonic()
    with pytest.raises(ToolError, match="timeout"):
        await shell(ctx, {"command": "(sleep 30.11 & wait)", "timeout": 0.5})
    assert time.monotonic() - start < 10  # the 30 s command was stopped at its 0.5 s timeout
    await eventually(lambda: none_running("sleep 30.11"), timeout=5)


async def test_shell_background_children_do_not_outlive_the_command(ctx):
    out = await shell(ctx, {"command": "sleep 30.12 & echo done"})
    assert out.text == "done"
    await eventually(lambda: none_running("sleep 30.12"), timeout=5)


async def test_shell_environment_has_no_secrets(ctx, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    out = await shell(ctx, {"command": "env"})
    assert "sk-secret" not in out.text and "ghp-secret" not in out.text and "PATH=" in out.text


async def test_files_write_read_list_inside_the_workspace(ctx):
    await file_write(ctx, {"path": "notes/a.txt", "content": "héllo\n"})
    await file_write(ctx, {"path": "notes/a.txt", "content": "more", "append": True})
    assert (await file_read(ctx, {"path": "notes/a.txt"})).text == "héllo\nmore"
    assert (await file_list(ctx, {"path": ".", "recursive": True})).text == "notes/\nnotes/a.txt"


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd", "notes/../../x"])
async def test_files_refuse_paths_outside_the_workspace(ctx, path):
    with pytest.raises(ToolError, match="outside the run's workspace"):
        await file_read(ctx, {"path": path})


async def test_files_refuse_a_symlink_pointing_out_and_writes_into_git(ctx, tmp_path):
    (tmp_path / "secret.txt").write_text("s")
    (ctx.workspace / "link").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ToolError, match="outside"):
        await file_read(ctx, {"path": "link"})
    with pytest.raises(ToolError, match=r"into \.git"):
        await file_write(ctx, {"path": ".git/config", "content": "x"})


async def test_a_folder_swapped_for_a_link_after_the_check_leads_nowhere(
    ctx, tmp_path, monkeypatch
):
    """The race: confine() saw a real folder; by the open, a command beside has put a link
    to a folder outside in its place. The write fails; nothing outside changes."""
    import activities.tools.files as files

    outside = tmp_path / "outside"
    outside.mkdir()
    (ctx.workspace / "sub").mkdir()
    checked = files.confine

    def confine_then_swap(workspace, path, write=False):
        target = checked(workspace, path, write=write)
        (ctx.workspace / "sub").rmdir()
        (ctx.workspace / "sub").symlink_to(outside)
        return target

    monkeypatch.setattr(files, "confine", confine_then_swap)
    with pytest.raises(ToolError, match="symbolic link"):
        await file_write(ctx, {"path": "sub/planted.txt", "content": "x"})
    assert list(outside.iterdir()) == []


async def test_file_tools_refuse_fifos_and_hard_linked_files_instead_of_hanging_or_writing_through(
    ctx, tmp_path
):
    os.mkfifo(ctx.workspace / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await asyncio.wait_for(
            file_read(ctx, {"path": "pipe"}), 5
        )  # a FIFO would block the worker forever
    (tmp_path / "elsewhere.txt").write_text("keep")
    os.link(tmp_path / "elsewhere.txt", ctx.workspace / "hard.txt")
    with pytest.raises(ToolError, match="other hard links"):
        await file_write(ctx, {"path": "hard.txt", "content": "overwritten"})
    assert (tmp_path / "elsewhere.txt").read_text() == "keep"
    out = await file_write(ctx, {"path": "new/dir/f.txt", "content": "ok"})
    assert (ctx.workspace / "new/dir/f.txt").read_text() == "ok" and "2 bytes" in out.text


async def test_missing_arguments_say_what_to_write(ctx):
    with pytest.raises(ToolError, match='"tool": "file_read", "path"'):
        await file_read(ctx, {})


def test_artifact_store_round_trip_and_markers(tmp_path):
    store = ArtifactStore(tmp_path)
    ref = store.put_text("xsky-run/1", "7", "result.txt", "big " * 1000)
    assert (
        ref.uri.startswith("artifact:xsky-run_1-")
        and ref.uri.endswith("/7/result.txt")
        and ref.size == 4000
        and len(ref.sha256) == 64
    )
    # a run whose id the "/" would otherwise collide with keeps a folder of its own
    assert (
        store.put_text("xsky-run_1", "7", "result.txt", "other").uri
        == "artifact:xsky-run_1/7/result.txt"
    )
    assert store.expand_markers(f"before {marker(ref)} after") == f"before {'big ' * 1000} after"
    with pytest.raises(ValueError):
        store.read_text("artifact:../../etc/passwd")
    with pytest.raises(FileNotFoundError, match="XSKY_ARTIFACTS"):
        store.read_text("artifact:nope/1/x.txt")


def reach(ctx: ToolContext, site: str, *more: int) -> ToolContext:
    """The browser is confined: its pages reach the test site (loopback) by an exact rule."""
    port = int(site.rsplit(":", 1)[1])
    ctx.egress = Policy(exact={("127.0.0.1", port), *(("127.0.0.1", p) for p in more)})
    return ctx


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text(
        "<html><head><title>Test page</title></head><body><h1>Price</h1><p id='v'>42 coins</p>"
        "<a href='/other.html'>Other</a></body></html>"
    )
    (root / "data.txt").write_text("plain data")
    # A page that loads itself again and again (a dashboard's refresh, a redirect chain):
    # whatever a tool reads of it may meet a page that is going away.
    (root / "restless.html").write_text(
        "<html><head><title>Restless</title></head><body><p id='v'>still here</p>"
        "<script>setTimeout(() => location.reload(), 5)</script></body></html>"
    )
    # ... and one whose element would come only after the page has already reloaded.
    (root / "restless-late.html").write_text(
        "<html><body><script>setTimeout(() => location.reload(), 300);"
        "setTimeout(() => document.body.append(Object.assign(document.createElement('p'),"
        " {id: 'late'})), 2000)</script></body></html>"
    )
    (root / "moves.html").write_text(
        "<html><head><title>Moving</title></head><body><p>one moment</p>"
        "<script>onload = () => setTimeout(() => location.replace('/index.html'), 0)</script>"
        "</body></html>"
    )
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    )
    server.RequestHandlerClass.log_message = lambda *a: None  # type: ignore[method-assign]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def test_http_get_fetches_and_reports_errors(ctx, site):
    out = await http_get(ctx, {"url": f"{site}/data.txt"})
    assert out.text == "plain data" and out.details["status"] == 200
    with pytest.raises(ToolError, match="HTTP 404"):
        await http_get(ctx, {"url": f"{site}/missing"})
    with pytest.raises(ToolError, match="only fetches http"):
        await http_get(ctx, {"url": "file:///etc/passwd"})


@pytest.mark.browser
async def test_browser_navigate_returns_title_text_links_and_a_screenshot(ctx, site):
    reach(ctx, site)
    try:
        out = await browser_navigate(ctx, {"url": f"{site}/index.html"})
        assert out.text.startswith("# Test page") and "42 coins" in out.text
        assert f"Other → {site}/other.html" in out.text
        (shot,) = out.artifacts
        assert shot.media_type == "image/png" and ctx.store.read_bytes(shot)[:4] == b"\x89PNG"
        value = await browser_navigate(
            ctx, {"url": f"{site}/index.html", "selector": "#v", "screenshot": False}
        )
        assert "42 coins" in value.text and not value.artifacts
    finally:
        await ctx.browsers.close()


@pytest.mark.browser
async def test_parallel_browser_agents_get_separate_pages(ctx, site):
    reach(ctx, site)
    try:

        async def one(path: str) -> str:
            return (
                await browser_navigate(ctx, {"url": f"{site}/{path}", "screenshot": False})
            ).text

        a, b = await asyncio.gather(one("index.html"), one("data.txt"))
        assert "42 coins" in a and "plain data" in b and "42 coins" not in b
    finally:
        await ctx.browsers.close()


def test_the_direct_tools_validation_knows_are_the_ones_activities_run():
    from activities.agents.direct import DIRECT_IMPLEMENTATIONS as RUNNABLE
    from xsky.plan.agent_config import DIRECT_TOOLS as VALIDATED
    from xsky.plan.agent_config import config_problems
    from xsky.security.tools import DIRECT_ONLY, TOOLS

    assert sorted(RUNNABLE) == sorted(VALIDATED)
    # The registry's direct tools, then the kinds the model loop never calls.
    assert VALIDATED == (*(n for n, t in TOOLS.items() if t.direct), *DIRECT_ONLY)
    assert set(VALIDATED) == {
        "shell",
        "file_read",
        "file_write",
        "file_list",
        "browser_navigate",
        "http_get",
        "llm",
        "ask_user",
        "noop",
        "gather",
        "watch",
    }
    assert all(config_problems({"tool": name}) == [] for name in VALIDATED)
    assert config_problems({"tool": "python_exec"}) == [
        f"config tool 'python_exec' is not a direct tool; use one of {', '.join(VALIDATED)}, "
        "or a tool of an MCP server (mcp__<server>__<tool>)"
    ]


def test_a_tool_table_that_disagrees_with_the_registry_fails_at_import():
    import subprocess
    import sys

    from activities.tools.registry import agree

    with pytest.raises(ImportError, match=r"no implementation for \['noop'\]"):
        agree("direct implementations", ["shell", "noop"], ["shell"])
    with pytest.raises(ImportError, match=r"unregistered implementations \['extra'\]"):
        agree("direct implementations", ["shell"], ["shell", "extra"])
    # The check runs when the worker imports the direct tools: a registry entry marked direct
    # with no implementation stops the import.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import xsky.security.tools as t; t.DIRECT_TOOLS += ('extra',); "
            "import activities.agents.direct",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "direct implementations disagree: no implementation for ['extra']" in done.stderr


def test_the_tools_that_start_processes_are_the_registry_s_exec_tools():
    from activities.sandbox.gate import PROCESS_TOOLS
    from xsky.security.tools import TOOLS

    assert PROCESS_TOOLS == {n for n, t in TOOLS.items() if t.exec} == {"shell", "python_exec"}


async def test_code_search_finds_lines_and_skips_protected_and_binary_files(ctx):
    from activities.tools.code import code_search

    (ctx.workspace / "src").mkdir()
    (ctx.workspace / "src" / "app.py").write_text("def main():\n    return 42\n")
    (ctx.workspace / "src" / "data.bin").write_bytes(b"\0def main")
    (ctx.workspace / ".git").mkdir()
    (ctx.workspace / ".git" / "x.py").write_text("def main(): pass")
    assert await code_search(ctx, {"pattern": r"def \w+"}) == "src/app.py:1: def main():"
    assert await code_search(ctx, {"pattern": "return", "glob": "*.txt"}) == "no match for 'return'"
    with pytest.raises(ToolError, match="not a valid regular expression"):
        await code_search(ctx, {"pattern": "("})


async def test_python_exec_runs_in_the_workspace_and_reports_errors(ctx):
    from activities.tools.code import python_exec

    out = await python_exec(ctx, {"code": "import os; print(os.getcwd()); print(6 * 7)"})
    assert out == f"exit code 0\n{ctx.workspace}\n42\n"
    out = await python_exec(ctx, {"code": "raise SystemExit('boom')"})
    assert out.startswith("exit code 1") and "boom" in out


def test_read_skill_reads_only_bound_skills(tmp_path):
    from activities.tools.skills import SkillLibrary

    (tmp_path / "skills" / "deploy").mkdir(parents=True)
    (tmp_path / "skills" / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploy a FastAPI app\n---\n# Steps\n1. …\n"
    )
    skills = SkillLibrary(tmp_path / "skills", "run-1")
    assert skills.listing(["deploy", "missing"]) == "- deploy: Deploy a FastAPI app"
    assert skills.read("deploy", ["deploy"]).startswith("---\nname: deploy")
    with pytest.raises(ToolError, match="not bound"):
        skills.read("deploy", [])
    with pytest.raises(ToolError, match="no published version under"):
        skills.read("missing", ["missing"])


def test_a_hand_written_skill_whose_skill_md_is_a_link_is_not_read(tmp_path):
    from activities.skills.canary_export import export_plain
    from activities.tools.skills import SkillLibrary

    canary = tmp_path / "outside" / "credentials"
    canary.parent.mkdir()
    canary.write_text("---\nname: leak\ndescription: CANARY-SECRET\n---\naws_secret=CANARY\n")
    skill = tmp_path / "skills" / "leak"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").symlink_to(canary)
    skills = SkillLibrary(tmp_path / "skills", "run-1")
    assert "CANARY" not in skills.listing(["leak"])
    with pytest.raises(ToolError, match="no published version"):
        skills.read("leak", ["leak"])
    # exported, a link would be copied as the file it points to: refused, nothing placed
    (skill / "SKILL.md").unlink()
    (skill / "SKILL.md").write_text("---\nname: leak\ndescription: Notes\n---\nSee notes.\n")
    (skill / "references").mkdir()
    (skill / "references" / "notes.md").symlink_to(canary)
    placed = export_plain(skill, "leak", tmp_path / "agent-skills")
    assert placed.skipped and "links (references/notes.md)" in placed.skipped
    assert not (tmp_path / "agent-skills" / "leak").exists()
    assert "CANARY" not in "".join(
        p.read_text() for p in (tmp_path / "agent-skills").rglob("*") if p.is_file()
    )


@pytest.mark.browser
async def test_a_page_that_navigates_on_its_own_never_fails_the_attempt(ctx, site):
    # Playwright's "Execution context was destroyed" (a page gone as it was read) is the
    # page's doing, not the agent's: the tool reads the page again once it settles, and
    # says what happened if it never does — it never ends the agent's attempt with a raw error.
    reach(ctx, site)
    from activities.tools.browsing import BrowserSession

    session = BrowserSession(ctx)
    try:
        for _ in range(2):  # the agent's one-call tool (a direct browser_navigate) alike
            direct = await browser_navigate(ctx, {"url": f"{site}/moves.html", "screenshot": False})
            assert "/moves.html" in direct.text or "/index.html" in direct.text
        for _ in range(3):  # a page sent on by its script once: read where it lands, or before
            moved = await session.navigate({"url": f"{site}/moves.html"})
            assert "/moves.html" in moved or "/index.html" in moved  # (read, where it was)
        try:
            first = await session.navigate({"url": f"{site}/restless.html"})
        except ToolError as e:
            assert "kept navigating away" in str(e)
        else:
            assert first.startswith("# Restless")
        for _ in range(4):
            try:
                text = await session.extract({"selector": "#v"})
            except ToolError as e:
                assert "navigat" in str(e)  # says why, in words the model can act on
            else:
                assert text == "still here"
            try:
                await session.extract({})
            except ToolError as e:
                assert "navigat" in str(e)
        # An element waited for on a page that never stays long enough to hold it: the
        # answer says the page kept navigating, not only that it lacks the element.
        with contextlib.suppress(ToolError):
            await session.navigate({"url": f"{site}/restless-late.html"})
        with pytest.raises(ToolError, match=r"navigated \d+ time|kept navigating away"):
            await session.extract({"selector": "#late"})
    finally:
        await session.close()
        await ctx.browsers.close()


@pytest.mark.browser
async def test_a_browser_session_keeps_one_page_across_calls(ctx, site):
    reach(ctx, site)
    from activities.tools.browsing import BrowserSession

    session = BrowserSession(ctx)
    try:
        page = await session.navigate({"url": f"{site}/index.html"})
        assert page.startswith("# Test page") and "42 coins" in page
        assert await session.extract({"selector": "#v"}) == "42 coins"
        moved = await session.click({"selector": "text=Other"})
        assert moved.startswith("clicked 'text=Other'; now at") and "other.html" in moved
        shot = await session.screenshot({})
        assert "saved a screenshot" in shot and ctx.artifacts[0].media_type == "image/png"
        with pytest.raises(ToolError, match="no element matches"):
            await session.extract({"selector": "#nope"})
    finally:
        await session.close()
        await ctx.browsers.close()


@pytest.mark.browser
async def test_the_domain_deny_list_blocks_redirects_and_not_only_explicit_urls(ctx, site):
    """A deny rule for a host blocks any request to it, even one reached by a redirect."""
    import http.server

    from xsky.security.permissions import PermissionLayer, PermissionSettings, denied_host

    port = site.rsplit(":", 1)[1]

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{port}/index.html")
            self.end_headers()

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    reach(ctx, site, server.server_address[1])
    ctx.egress.exact.add(("localhost", int(port)))  # type: ignore[union-attr]
    ctx.egress.deny.append("localhost")  # type: ignore[union-attr]  # the proxy's share of the rule
    decisions: list[tuple[str, str, str]] = []
    ctx.record = lambda *d: decisions.append(d)
    ctx.blocked_url = denied_host(
        PermissionSettings(
            layers=[PermissionLayer(scope="project", deny=["browser_navigate(domain:localhost)"])]
        )
    )
    try:
        assert (
            await browser_navigate(ctx, {"url": f"{site}/index.html", "screenshot": False})
        ).details["status"] == 200
        # The hop to the denied host is refused (by the proxy, which sees every hop): the
        # page behind it is never loaded, the navigation fails (not retried) saying so, and
        # the refusal is in the log.
        go = f"http://127.0.0.1:{server.server_address[1]}/go"
        with pytest.raises(ToolError) as info:
            await browser_navigate(ctx, {"url": go, "screenshot": False})
        assert str(info.value) == (
            f"browser_navigate {go} was refused by xsky's egress proxy: localhost is denied by a domain rule"
        )
        assert not info.value.retryable and "42 coins" not in str(info.value)
        assert any(d[0] == f"localhost:{port}" and d[1] == "deny" for d in decisions), decisions
    finally:
        server.shutdown()
        await ctx.browsers.close()


@pytest.mark.browser
async def test_pages_get_no_webrtc_which_would_bypass_the_egress_proxy(ctx, site):
    """WebRTC's UDP goes around an HTTP proxy: pages see no peer connection at all."""
    try:
        async with ctx.browsers.page() as page:
            await page.goto(f"{site}/index.html")
            kinds = await page.evaluate(
                "[typeof RTCPeerConnection, typeof webkitRTCPeerConnection, typeof RTCDataChannel]"
            )
            framed = await page.evaluate("""() => { const f = document.createElement('iframe'); document.body.appendChild(f);
                                                   return typeof f.contentWindow.RTCPeerConnection; }""")
    finally:
        await ctx.browsers.close()
    assert kinds == ["undefined"] * 3
    assert framed == "undefined"


def test_a_killed_workers_values_folder_is_swept_and_a_live_ones_kept(tmp_path, monkeypatch):
    from activities.tools import values

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = tmp_path / f"xsky-values-{gone.pid}-abc"
    live = tmp_path / f"xsky-values-{os.getpid()}-def"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "XSKY_V1").write_text("a result's text")
    values.sweep_stale()
    assert not stale.exists() and live.exists()


async def test_a_git_folder_a_file_tool_plants_is_swept_as_a_commands_is(ctx):
    # A file agent (no shell) wrote HEAD, objects/, refs/ and a config with core.fsmonitor at
    # the workspace's root; no command ran after it, so no sweep: a person's `git status` in
    # the workspace ran the program outside the sandbox (a security review:
    # /tmp/sec8/poc/git_plant_by_file_tool.sh)
    from activities.tools.files import file_write

    for path, content in (
        ("HEAD", "ref: refs/heads/main\n"),
        ("objects/info/keep", ""),
        ("refs/heads/keep", ""),
    ):
        await file_write(ctx, {"path": path, "content": content})
    config = '[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch ran; false"\n'
    out = await file_write(ctx, {"path": "config", "content": config})
    kept = (ctx.workspace / "config").read_text()
    assert "fsmonitor" not in kept and "worktree" not in kept
    assert "core.fsmonitor" in out.text and out.details["gitGuard"]
    plain = await file_write(ctx, {"path": "notes/config", "content": "[x]\n\ty = 1\n"})
    assert "gitGuard" not in plain.details  # a file that no git reads is left as written


async def test_a_commands_values_are_no_other_local_users_to_read(ctx):
    # They sit in the host's /tmp while the command runs: the folder was 0755 and its files
    # 0644, so every user of the machine read the results a command was given (a security
    # review: /tmp/sec8/poc/values_world_readable.sh, `nobody` read a result's canary)
    from activities.sandbox import bwrap
    from activities.tools import values

    with values.provided(ctx, {"XSKY_V1": "CANARY-secret"}) as (given, prelude):
        (folder,) = [p for p in given.confinement.readable if p.name.startswith(values.PREFIX)]
        for path in (folder, folder / "XSKY_V1"):
            info = path.stat()
            assert info.st_mode & 0o077 == 0, oct(info.st_mode)
            assert info.st_uid == bwrap.identity().uid  # the sandbox's user reads it
        assert "XSKY_V1" in prelude
    assert not folder.exists()
    out = await shell(ctx, {"command": 'printf %s "${XSKY_V1}"', "values": {"XSKY_V1": "v a l"}})
    assert out.text == "v a l"


def test_a_stale_values_folder_that_is_a_link_is_not_followed(tmp_path, monkeypatch):
    from activities.tools import values

    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    (target / "keep").write_text("x")
    monkeypatch.setattr(values.tempfile, "gettempdir", lambda: str(tmp_path))
    (tmp_path / f"{values.PREFIX}999999999-x").symlink_to(target)
    values.sweep_stale()
    assert (target / "keep").exists() and target.stat().st_mode & 0o777 == 0o755


async def test_a_git_folder_an_mcp_servers_writes_plant_is_swept_as_its_session_ends(ctx):
    # A stdio MCP server (a filesystem server) writes in the workspace as a file tool does; no
    # sweep followed its calls, so a git folder it planted waited for a person's git.
    from activities.mcp.toolset import McpToolset

    class Pool:
        async def release(self, toolset: object) -> None:  # its sessions closed: nothing here
            return None

    for path, content in (
        ("HEAD", "ref: refs/heads/main\n"),
        ("objects/info/keep", ""),
        ("refs/heads/keep", ""),
        ("config", '[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch ran; false"\n'),
    ):
        (ctx.workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (ctx.workspace / path).write_text(content)
    toolset = McpToolset(ctx, None, Pool())  # type: ignore[arg-type]
    toolset.servers = {"fs": None}  # type: ignore[dict-item]
    await toolset.release()
    assert "fsmonitor" not in (ctx.workspace / "config").read_text()


@pytest.fixture(scope="module")
def login_site() -> Iterator[str]:
    with serving_login_site() as url:
        yield url


@pytest.mark.browser
async def test_a_browser_agent_continues_the_page_the_agent_it_depends_on_left(
    ctx, login_site, tmp_path
):
    """A real Eko plan: agent 0 logs in, agent 1 (dependsOn 0) reads the dashboard. Eko's
    Browser agents share one page; here agent 1 started on a blank page of its own, logged out.
    Now it continues the page agent 0 left — its cookies, its origin's storage, its address —
    and an agent that does not depend on it still starts logged out."""
    from activities.tools.browsing import BrowserSession
    from xsky.artifacts import page_key

    reach(ctx, login_site)
    first = BrowserSession(ctx)  # agent a1
    try:
        said = await first.navigate({"url": f"{login_site}/login?user=ann"})
        assert "welcome ann" in said and "/home" in said
        await (await first.page()).evaluate("localStorage.setItem('token', 'T-ann')")
    finally:
        await first.close()
    # kept apart from the run's folder, which its commands may read (a sandbox mounts it)
    kept = tmp_path / "artifacts" / page_key("run-1", "a1")
    assert kept.is_file() and "run-1" not in kept.relative_to(tmp_path / "artifacts").parts[0]

    notes: list[str] = []
    second = BrowserSession(
        dataclasses.replace(ctx, agent_id="a2", page_from=["a0", "a1"], progress=notes.append)
    )
    try:  # (a0 left no page)
        assert await second.extract({"selector": "#who"}) == "welcome ann"  # at /home, as left
        page = await second.page()
        assert page.url.endswith("/home") and "continuing the page a1 left" in notes
        assert await page.evaluate("localStorage.getItem('token')") == "T-ann"
        said = await second.navigate({"url": f"{login_site}/dashboard"})
        assert "welcome ann" in said  # the login's cookie went on with the page
    finally:
        await second.close()

    # Its first step opens an address of its own: it stays there (the left one is not gone to).
    third = BrowserSession(dataclasses.replace(ctx, agent_id="a3", page_from=["a1"]))
    try:
        assert "welcome ann" in await third.navigate({"url": f"{login_site}/dashboard"})
        assert await third.extract({"selector": "#who"}) == "welcome ann"
        assert (await third.page()).url.endswith("/dashboard")
    finally:
        await third.close()

    apart = BrowserSession(dataclasses.replace(ctx, agent_id="a4", page_from=[]))
    try:
        assert "please log in" in await apart.navigate({"url": f"{login_site}/dashboard"})
    finally:
        await apart.close()
        await ctx.browsers.close()


@pytest.mark.browser
async def test_a_logout_is_not_undone_by_a_page_from_before_it(ctx, login_site):
    """a1 logs in; a2 continues a1's page and logs out; a3 depends on both. a2's page is the
    newest and is continued, with the others' cookies it does not hold — a1's login cookie
    among them, which a2 had let go: a3 was logged in again (a thirteenth review)."""
    from activities.tools.browsing import BrowserSession

    reach(ctx, login_site)
    first = BrowserSession(ctx)  # agent a1
    try:
        assert "welcome ann" in await first.navigate({"url": f"{login_site}/login?user=ann"})
    finally:
        await first.close()
    second = BrowserSession(dataclasses.replace(ctx, agent_id="a2", page_from=["a1"]))
    try:
        assert "please log in" in await second.navigate({"url": f"{login_site}/logout"})
    finally:
        await second.close()
    third = BrowserSession(dataclasses.replace(ctx, agent_id="a3", page_from=["a1", "a2"]))
    try:
        assert await third.extract({"selector": "#who"}) == "please log in"
        assert "please log in" in await third.navigate({"url": f"{login_site}/dashboard"})
    finally:
        await third.close()
    # a login after the logout, in a page of its own: the merge still brings it
    fourth = BrowserSession(dataclasses.replace(ctx, agent_id="a4", page_from=[]))
    try:
        assert "welcome bob" in await fourth.navigate({"url": f"{login_site}/login?user=bob"})
    finally:
        await fourth.close()
    fifth = BrowserSession(dataclasses.replace(ctx, agent_id="a5", page_from=["a2"]))
    try:  # the logged-out page, looked at again: it ends last
        assert "please log in" in await fifth.navigate({"url": f"{login_site}/home"})
    finally:
        await fifth.close()
    sixth = BrowserSession(dataclasses.replace(ctx, agent_id="a6", page_from=["a4", "a5"]))
    try:
        assert "welcome bob" in await sixth.navigate({"url": f"{login_site}/dashboard"})
    finally:
        await sixth.close()
    # A branch parallel to the logout's, continued from the same login, only reads and ends
    # last: it holds the login because it was given it, which undoes no logout.
    seventh = BrowserSession(dataclasses.replace(ctx, agent_id="a7", page_from=["a1"]))
    try:
        assert "welcome ann" in await seventh.navigate({"url": f"{login_site}/home"})
    finally:
        await seventh.close()
    eighth = BrowserSession(dataclasses.replace(ctx, agent_id="a8", page_from=["a2", "a7"]))
    try:
        assert "please log in" in await eighth.navigate({"url": f"{login_site}/dashboard"})
    finally:
        await eighth.close()
        await ctx.browsers.close()


@pytest.mark.browser
async def test_a_page_that_fills_its_storage_is_not_kept_for_the_next_agent(
    ctx, login_site, tmp_path, monkeypatch, caplog
):
    """A page's state goes to the store whole: a page that filled its origin's storage would
    have been written (and read back by the next agent) at any size."""
    from activities.tools import browsing
    from xsky.artifacts import page_key

    monkeypatch.setattr(browsing, "PAGE_LIMIT", 64 * 1024)
    reach(ctx, login_site)
    session = browsing.BrowserSession(ctx)
    try:
        await session.navigate({"url": f"{login_site}/login?user=ann"})
        page = await session.page()
        await page.evaluate("localStorage.setItem('big', 'x'.repeat(100000))")
    finally:
        await session.close()
        await ctx.browsers.close()
    assert not (tmp_path / "artifacts" / page_key("run-1", "a1")).exists()
    assert "more than 65536: not kept" in caplog.text


@pytest.mark.browser
async def test_a_page_left_that_chromium_refuses_is_passed_over_and_closing_always_closes(
    ctx, login_site, tmp_path
):
    """A page file Chromium does not take (damaged, or from another version) failed every
    attempt of the agent after it; and a close cancelled while it kept the page left the
    browser context open."""
    from activities.tools.browsing import BrowserSession
    from xsky.artifacts import page_key

    reach(ctx, login_site)
    bad = {"url": f"{login_site}/home", "storage": {"cookies": [{"name": 1}]}, "at": 1}
    ctx.store.objects.put(page_key("run-1", "a0"), json.dumps(bad).encode())
    after = BrowserSession(dataclasses.replace(ctx, agent_id="a2", page_from=["a0"]))
    try:
        assert "please log in" in await after.navigate({"url": f"{login_site}/dashboard"})
    finally:
        await after.close()

    session = BrowserSession(ctx)
    try:
        await session.navigate({"url": f"{login_site}/dashboard"})
        context = (await session.page()).context

        async def stuck() -> None:
            await asyncio.sleep(30)

        session._leave = stuck  # type: ignore[method-assign]
        closing = asyncio.ensure_future(session.close())
        await asyncio.sleep(0.2)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert context.pages == []  # closed all the same
    finally:
        await ctx.browsers.close()


def test_an_agent_after_a_loop_continues_the_page_its_last_item_left(ctx):
    """A loop's items (read[1]…) leave pages, the agent that gathers them (read) opens none: an
    agent after the loop continues the page of its last item that used one, not a blank one."""
    from activities.tools.browsing import left_page
    from xsky.artifacts import page_key

    def leave(agent: str, url: str, at: float) -> None:
        left = {"url": url, "storage": {"cookies": [], "origins": []}, "at": at}
        ctx.store.objects.put(page_key("run-1", agent), json.dumps(left).encode())

    after = dataclasses.replace(ctx, agent_id="after", page_from=["read"])
    assert left_page(after) is None  # no item used a page
    leave("read[1]", "http://site/1", 3.0)  # (the first item ended last: items run at once)
    leave("read[2]", "http://site/2", 1.0)
    leave("read[10]", "http://site/10", 2.0)
    leave("reader[11]", "http://site/other", 4.0)  # another loop's item
    whose, left = left_page(after) or ("", {})
    assert whose == "read[10]" and left["url"] == "http://site/10"
    leave("read", "http://site/own", 0.5)  # a dependency that used a page itself: its own
    assert left_page(after) == (
        "read",
        {"url": "http://site/own", "storage": {"cookies": [], "origins": []}, "at": 0.5},
    )


@pytest.mark.browser
async def test_a_direct_browser_navigate_continues_and_leaves_its_page(ctx, login_site):
    """A direct `browser_navigate` (no model) opened a page of its own and left none: a login
    it made was lost to the agent after it, and a login before it was not its own. Its page
    goes on as a model's browser agent's does."""
    from activities.tools.browsing import BrowserSession
    from activities.tools.web import browser_navigate

    reach(ctx, login_site)
    said = await browser_navigate(
        ctx, {"url": f"{login_site}/login?user=ann", "screenshot": False}
    )  # agent a1 logs in
    assert "welcome ann" in said.text
    after = BrowserSession(dataclasses.replace(ctx, agent_id="a2", page_from=["a1"]))
    try:
        assert await after.extract({"selector": "#who"}) == "welcome ann"  # where a1 left it
    finally:
        await after.close()
    # and a direct one after a login goes on logged in, at its own address
    direct = dataclasses.replace(ctx, agent_id="a3", page_from=["a2"])
    dashboard = await browser_navigate(
        direct, {"url": f"{login_site}/dashboard", "screenshot": False}
    )
    assert "welcome ann" in dashboard.text
    apart = await browser_navigate(
        dataclasses.replace(ctx, agent_id="a4", page_from=[]),
        {"url": f"{login_site}/dashboard", "screenshot": False},
    )
    assert "please log in" in apart.text
    await ctx.browsers.close()


@pytest.mark.browser
async def test_a_page_whose_browser_went_away_ends_the_attempt_rather_than_tell_the_model(
    ctx, site
):
    # The shared browser replaced under the page (taken for hung) or crashed: the page is dead
    # and every later call of the session would fail alike. Told to the model as a tool's
    # error, it could only call again in vain (a direct agent failed for good); raised, the
    # attempt ends and its retry opens a page in a live browser.
    reach(ctx, site)
    from activities.tools.browsing import BrowserSession

    session = BrowserSession(ctx)
    try:
        await session.navigate({"url": f"{site}/index.html"})
        await session._page.context.close()
        with pytest.raises(Exception) as raised:
            await session.extract({"selector": "#v"})
        assert not isinstance(raised.value, ToolError), raised.value
        assert "closed" in str(raised.value)
    finally:
        await session.close()
        await ctx.browsers.close()
