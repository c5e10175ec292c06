"""A site that logs a visitor in with a cookie, for browser agents that continue a page:
``/login?user=NAME`` sets ``who=NAME`` and sends the browser to ``/home``, ``/logout`` takes
the cookie back and sends the browser to ``/home``; every other page
greets the visitor by the cookie (``<p id="who">welcome NAME</p>``), or asks them to log in."""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, urlparse

from tests.local_http import serving


class _Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/login":
            user = parse_qs(url.query)["user"][0]
            self.send_response(302)
            self.send_header("Set-Cookie", f"who={user}; Path=/")
            self.send_header("Location", "/home")
            self.end_headers()
            return
        if url.path == "/logout":
            self.send_response(302)
            self.send_header("Set-Cookie", "who=; Path=/; Max-Age=0")
            self.send_header("Location", "/home")
            self.end_headers()
            return
        cookie = self.headers.get("Cookie", "")
        who = cookie.split("who=", 1)[1].split(";")[0] if "who=" in cookie else None
        greeting = f"welcome {who}" if who else "please log in"
        body = f"<html><head><title>{url.path}</title></head><body><p id='who'>{greeting}</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving_login_site() -> Iterator[str]:
    """The site's base URL (http://127.0.0.1:PORT) while the block runs."""
    with serving(_Site) as url:
        yield url
