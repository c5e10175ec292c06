"""The live page's server serves only the browser that holds its key, on this machine's names,
and takes interventions only from its own page (cli/ui/guard.py): a page of another site —
a form it posts, a fetch, its name rebound to 127.0.0.1 — can neither read runs nor steer
them. The page in Chromium, through the key's link: tests/integration/test_live_page.py."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.ui.guard import KEY_FILE, cookie_name, page_key
from cli.ui.server import make_app

PORT = 8765
KEY = "k3y-of-the-page_0123456789"


class Said:
    def __init__(self, message: str):
        self.message = message
        self.follow_up = None


class FakeRun:
    """Records what reaches the run (nothing may, when refused)."""

    id = "R1"

    def __init__(self, calls: list[tuple[str, ...]]):
        self.calls = calls

    async def approve(self, request: str, decision: str, text: str | None) -> Said:
        self.calls.append(("approve", request, decision))
        return Said("approved")


class FakeX:
    def __init__(self, calls: list[tuple[str, ...]]):
        self.calls = calls

    async def get(self, run_id: str) -> FakeRun:
        return FakeRun(self.calls)

    async def runs(self, limit: int = 30) -> list[Any]:
        self.calls.append(("runs",))
        return []


def client(
    calls: list[tuple[str, ...]], listen: str = "127.0.0.1", host: str = "127.0.0.1"
) -> httpx.AsyncClient:
    async def connect() -> FakeX:
        return FakeX(calls)

    app = make_app(connect, None, key=KEY, port=PORT, listen=listen)  # type: ignore[arg-type]
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=f"http://{host}:{PORT}"
    )


# What <form method=post enctype=text/plain action=".../act"> on another site sends: a
# "simple" request, so the browser asks nobody's leave first.
FORM_BODY = '{"action":"approve","request":"A-2","decision":"allow_run","x":"=' + '"}'


async def test_another_sites_form_cannot_steer_a_run_even_with_the_cookie() -> None:
    calls: list[tuple[str, ...]] = []
    async with client(calls) as http:
        http.cookies.set(cookie_name(PORT), KEY)
        r = await http.post(
            "/api/runs/R1/act",
            content=FORM_BODY,
            headers={"Content-Type": "text/plain", "Origin": "https://evil.example"},
        )
        assert r.status_code == 415 and "Content-Type: application/json" in r.json()["error"]
        # JSON from another origin (it would need a CORS preflight, which is never answered)
        r = await http.post(
            "/api/runs/R1/act",
            json={"action": "approve", "request": "A-2"},
            headers={"Origin": "https://evil.example"},
        )
        assert r.status_code == 403 and "evil.example" in r.json()["error"]
        assert calls == []
        # The page itself: its origin, JSON — it reaches the run.
        r = await http.post(
            "/api/runs/R1/act",
            json={"action": "approve", "request": "A-2", "decision": "allow_run"},
            headers={"Origin": f"http://127.0.0.1:{PORT}"},
        )
        assert r.json() == {"ok": True, "message": "approved"}
    assert calls == [("approve", "A-2", "allow_run")]


@pytest.mark.parametrize(
    "path", ["/", "/api/runs", "/runs/R1/events", "/runs/R1/agents/T-1/log", "/api/event-types"]
)
async def test_without_the_key_nothing_of_a_run_is_served(path: str) -> None:
    calls: list[tuple[str, ...]] = []
    async with client(calls) as http:
        r = await http.get(path)
        assert r.status_code == 403
        assert "open the link `starter.py ui` printed" in r.json()["error"]
        http.cookies.set(cookie_name(PORT), "not-the-key")
        r = await http.get(path)
        assert r.status_code == 403 and "not this page's key" in r.json()["error"]
        r = await http.post("/api/runs/R1/act", json={"action": "approve", "request": "A-2"})
        assert r.status_code == 403
    assert calls == []


async def test_the_keys_link_sets_the_cookie_and_leaves_the_address_bar() -> None:
    calls: list[tuple[str, ...]] = []
    async with client(calls) as http:
        r = await http.get("/", params={"key": "wrong", "run": "R1"})
        assert r.status_code == 403 and not r.headers.get("set-cookie")
        r = await http.get("/", params={"key": KEY, "run": "xsky-a b"})
        assert r.status_code == 303
        assert r.headers["location"] == "/?run=xsky-a+b"  # the key is not kept in the URL
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{cookie_name(PORT)}={KEY};")
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
        # the cookie now opens everything
        r = await http.get("/api/runs")
        assert r.status_code == 200 and r.json() == []
        r = await http.get("/")
        assert r.status_code == 200 and "<html" in r.text.lower()
    assert calls == [("runs",)]


async def test_a_name_rebound_to_this_machine_is_refused() -> None:
    """DNS rebinding: another site's name made to point at 127.0.0.1 arrives with its own
    Host — refused even holding the key (it would not, its cookie being this host's)."""
    calls: list[tuple[str, ...]] = []
    async with client(calls, host="rebind.evil.example") as http:
        http.cookies.set(cookie_name(PORT), KEY, domain="rebind.evil.example")
        r = await http.get("/api/runs")
        assert r.status_code == 403 and "rebind.evil.example" in r.json()["error"]
    for name in ("localhost", "[::1]"):
        async with client(calls, host=name) as http:
            http.cookies.set(cookie_name(PORT), KEY)
            assert (await http.get("/api/runs")).status_code == 200
    # Listening on every address: any name, the key alone keeps others out.
    async with client(calls, listen="0.0.0.0", host="box.lan") as http:
        assert (await http.get("/api/runs")).status_code == 403
        http.cookies.set(cookie_name(PORT), KEY)
        assert (await http.get("/api/runs")).status_code == 200


async def test_the_pages_script_and_style_need_no_key() -> None:
    async with client([]) as http:
        r = await http.get("/static/app.js")
        assert r.status_code == 200 and "EventSource" in r.text


def test_the_key_is_made_once_per_home_and_only_its_owner_reads_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = page_key(home)
    assert len(key) >= 32 and page_key(home) == key  # a restarted page's tabs still hold it
    assert stat.S_IMODE((home / KEY_FILE).stat().st_mode) == 0o600
    assert page_key(tmp_path / "other") != key
    assert cookie_name(8765) != cookie_name(8766)  # two homes' pages on one machine


def test_a_new_key_takes_the_old_ones_place_for_every_page_started_from_now_on(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    old = page_key(home)
    new = page_key(home, new=True)
    assert new != old and page_key(home) == new  # pages started from now on use it
    assert stat.S_IMODE((home / KEY_FILE).stat().st_mode) == 0o600
    assert sorted(p.name for p in home.iterdir()) == [KEY_FILE]  # nothing left beside it


def test_each_transcript_line_is_its_own_event_id_so_a_reconnect_skips_none() -> None:
    """Every line of a batch had the batch's end as its SSE id: a page that lost the stream
    after the first line of five reconnected past the other four."""
    import json

    from cli.ui.server import transcript_lines

    lines = [json.dumps({"type": "message", "role": "user", "content": f"m{i}"}) for i in range(5)]
    data = "".join(line + "\n" for line in lines).encode()
    got = list(transcript_lines(data, 100))
    ends = [100 + len("".join(line + "\n" for line in lines[: i + 1]).encode()) for i in range(5)]
    assert [offset for _, offset in got] == ends
    # resuming after the second line's id gives the third line first
    again = list(transcript_lines(data[ends[1] - 100 :], ends[1]))
    assert [said["text"] for said, _ in again] == [said["text"] for said, _ in got[2:]]


async def test_other_local_apps_cookies_do_not_hide_the_key() -> None:
    """A browser sends every cookie of 127.0.0.1 to every port: one with a space or JSON in
    it (a dev server's, Jupyter's) made the whole header unreadable and the key with it."""
    async with client([]) as http:
        for header in (
            f'sess={{"a":1}}; {cookie_name(PORT)}={KEY}',
            f"{cookie_name(PORT)}={KEY}; a=b c",
            f"{cookie_name(8766)}=other; {cookie_name(PORT)}={KEY}",
        ):
            r = await http.get("/api/runs", headers={"cookie": header})
            assert r.status_code == 200, (header, r.text)


async def test_a_script_shows_the_key_in_an_authorization_header() -> None:
    # The event stream is documented for any client; only the browser's cookie worked.
    async with client([]) as http:
        shown = await http.get("/api/runs", headers={"Authorization": f"Bearer {KEY}"})
        assert shown.status_code == 200
        wrong = await http.get("/api/runs", headers={"Authorization": "Bearer not-the-key"})
        assert wrong.status_code == 403 and "not this page's key" in wrong.json()["error"]
        none = await http.get("/api/runs")
        assert none.status_code == 403 and "Authorization: Bearer KEY" in none.json()["error"]
        # a stale cookie (from before `ui --new-key`) does not refuse the right header
        stale = await http.get(
            "/api/runs",
            headers={"Authorization": f"Bearer {KEY}", "Cookie": f"{cookie_name(PORT)}=old-key"},
        )
        assert stale.status_code == 200
