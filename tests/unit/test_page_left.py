"""The page an agent left (activities/tools/browsing.py left_page): a file that cannot be used
is passed over — the agent after it starts on a page of its own — whatever is wrong with it."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from activities.storage.local import LocalStore
from activities.tools.browsing import left_page
from xsky.artifacts import page_key

GOOD = {"url": "https://example.com/", "storage": {"cookies": [], "origins": []}, "at": 5.0}


def context(tmp_path: Path, files: dict[str, bytes]) -> types.SimpleNamespace:
    store = LocalStore(tmp_path)
    for agent, data in files.items():
        store.put(page_key("r1", agent), data)
    return types.SimpleNamespace(
        run_id="r1", page_from=list(files), store=types.SimpleNamespace(objects=store)
    )


@pytest.mark.parametrize(
    "data",
    [
        b'{"url": "https://example.com/", "storage": {"cook',  # cut short
        b"[1, 2]",
        json.dumps({**GOOD, "at": "yesterday"}).encode(),
        json.dumps({**GOOD, "at": [1]}).encode(),
        json.dumps({**GOOD, "at": {"t": 1}}).encode(),
    ],
)
def test_a_page_file_that_cannot_be_used_is_passed_over(tmp_path: Path, data: bytes) -> None:
    ctx = context(tmp_path, {"login": data, "search": json.dumps(GOOD).encode()})
    assert left_page(ctx) == ("search", GOOD)
    alone = context(tmp_path / "alone", {"login": data})
    assert left_page(alone) is None


def test_the_newest_page_is_continued(tmp_path: Path) -> None:
    older = {**GOOD, "at": 1.0}
    ctx = context(tmp_path, {"a": json.dumps(older).encode(), "b": json.dumps(GOOD).encode()})
    assert left_page(ctx) == ("b", GOOD)


def test_a_loops_item_pages_are_listed_by_their_own_prefix() -> None:
    # A browser agent after a dependency that left no page lists only that dependency's items'
    # pages (a LIST whose answer grows with one loop, not with every page of the run).
    from xsky.artifacts import item_pages, page_key

    for agent in ("read", "a/b", "x.", ".x", "T-1", "é" * 200):
        prefix = item_pages("run-1", agent)
        for n in (1, 7, 1000):
            assert page_key("run-1", f"{agent}[{n}]").startswith(prefix)
        assert not page_key("run-1", "other").startswith(prefix)


def test_the_newest_page_keeps_the_cookies_of_the_others_it_does_not_hold(tmp_path: Path) -> None:
    # review12: a login (a) and a plain look elsewhere (b, a direct navigate) both before c:
    # b ended last, and c continued b's page — logged out. It continues b's page with a's
    # session cookie; a cookie both hold is as the newest holds it.
    def cookie(name: str, value: str) -> dict[str, str]:
        return {"name": name, "value": value, "domain": "shop.test", "path": "/"}

    login = {**GOOD, "at": 1.0}
    login["storage"] = {
        "cookies": [cookie("session", "s3cr3t"), cookie("lang", "de")],
        "origins": [],
    }
    look = {**GOOD, "at": 2.0, "url": "https://news.test/"}
    look["storage"] = {"cookies": [cookie("lang", "en")], "origins": []}
    ctx = context(tmp_path, {"a": json.dumps(login).encode(), "b": json.dumps(look).encode()})
    agent, left = left_page(ctx)
    assert agent == "b" and left["url"] == "https://news.test/"
    kept = {c["name"]: c["value"] for c in left["storage"]["cookies"]}
    assert kept == {"session": "s3cr3t", "lang": "en"}


def test_past_the_cookie_cap_the_newest_pages_own_cookies_are_kept(tmp_path: Path) -> None:
    # _cookies keeps at most MAX_COOKIES: those cut are the older pages', never the newest
    # page's — a cookie both hold (the session it renewed) included, which the merge kept at
    # the place the oldest page had it, first in line to be cut.
    from activities.tools.browsing import MAX_COOKIES

    def cookie(name: str, value: str) -> dict[str, str]:
        return {"name": name, "value": value, "domain": "shop.test", "path": "/"}

    old = {**GOOD, "at": 1.0}
    old["storage"] = {
        "cookies": [cookie("session", "old")]
        + [cookie(f"o{i}", "x") for i in range(MAX_COOKIES - 1)],
        "origins": [],
    }
    new = {**GOOD, "at": 2.0}
    new["storage"] = {
        "cookies": [cookie("session", "new")] + [cookie(f"n{i}", "y") for i in range(5)],
        "origins": [],
    }
    ctx = context(tmp_path, {"a": json.dumps(old).encode(), "b": json.dumps(new).encode()})
    agent, left = left_page(ctx)
    kept = {c["name"]: c["value"] for c in left["storage"]["cookies"]}
    assert agent == "b" and len(kept) == MAX_COOKIES
    assert kept["session"] == "new" and all(f"n{i}" in kept for i in range(5))
