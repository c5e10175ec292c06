"""Who may use the live run page: the person holding its key, from the page itself.

The page can steer runs (approve a tool call, approve a plan, replan, cancel), so its server
must not take a request merely because it reached it:

- **a key**, made once per ``XSKY_HOME`` (``ui-key``, readable by its owner alone) and carried
  by the link ``starter.py ui`` prints; the page's first load with it sets a cookie of this
  server's own (``SameSite=Lax``: what another site's page fetches or posts goes without it;
  a link followed from elsewhere still opens the page), and every request but the static
  files must carry it — so a page of another site cannot read the runs or steer them, even
  when its name was made to point here (DNS rebinding: the cookie is not its name's);
- **its own name**: a request whose ``Host`` is not this machine's (or the address it was told
  to listen on) is refused — a rebound name is not ``localhost``;
- **a script** holding the key sends it as ``Authorization: Bearer KEY`` (a page of another
  site cannot set that header on a request here without a CORS answer it never gets);
- **its own page**: an intervention must say ``Content-Type: application/json`` (a form
  another site posts cannot, without asking first — and it is never told yes) and, when the
  browser names its ``Origin``, come from the page's own.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

KEY_FILE = "ui-key"
KEY_PARAM = "key"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})
OPEN_PATHS = ("/static/",)  # the page's own script and style: nothing of any run


def page_key(home: Path, new: bool = False) -> str:
    """The page's key for this home: read, or made once (only its owner may read it).
    ``new``: a new one in its place (a link was shared or shown): the old link, and every
    browser that holds its cookie, are refused by a page started from now on."""
    path = home / KEY_FILE
    if not new:
        try:
            key = path.read_text().strip()
            if key:
                return key
        except FileNotFoundError:
            pass
    home.mkdir(mode=0o700, parents=True, exist_ok=True)  # (its own: run histories, keys, logs)
    key = secrets.token_urlsafe(24)
    # Written beside it and renamed over it: a page starting meanwhile reads the old key or
    # the new one, never half of one.
    made = path.with_name(f".{KEY_FILE}.{os.getpid()}")
    fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    os.replace(made, path)
    return key


def cookie_name(port: int) -> str:
    """One cookie per port: a browser sends a host's cookies to all its ports, and two pages
    of two homes on one machine must not take each other's key."""
    return f"xsky_ui_{port}"


def _host_name(host: str) -> str:
    """``Host``'s name without its port (``[::1]:8765`` → ``::1``), lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class PageGuard:
    """ASGI middleware around the page's app: the key, the host, the origin (above)."""

    def __init__(self, app: ASGIApp, key: str, port: int, listen: str = "127.0.0.1"):
        self.app, self.key, self.port = app, key, port
        self.cookie = cookie_name(port)
        listen = listen.strip().lower().strip("[]")
        # Listening on every address: the name a remote browser uses is not known here, and
        # the key alone keeps others out. Else this machine's names and the one it was given.
        self.hosts: frozenset[str] | None = None if listen in ANY_ADDRESS else LOOPBACK | {listen}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path: str = scope.get("path", "/")
        host = headers.get("host", "")
        if self.hosts is not None and _host_name(host) not in self.hosts:
            await _refuse(
                send,
                403,
                f"this page's server answers to {sorted(self.hosts)[0]}:{self.port} (and this "
                f"machine's other names), not {host or 'no host'}: open the link `starter.py ui` "
                "printed",
            )
            return
        if path.startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        given = query.get(KEY_PARAM)
        if path == "/" and given is not None:
            if not self._right(given):
                await _refuse(send, 403, _WRONG_KEY)
                return
            # The key goes into this server's cookie and out of the address bar.
            rest = urlencode([(k, v) for k, v in query.items() if k != KEY_PARAM])
            await _send(
                send,
                303,
                b"",
                [
                    (b"location", ("/" + (f"?{rest}" if rest else "")).encode()),
                    (
                        b"set-cookie",
                        f"{self.cookie}={self.key}; Path=/; HttpOnly; SameSite=Lax".encode(),
                    ),
                ],
            )
            return
        # Browsers send a host's cookies to all its ports: other local apps' cookies come
        # too, in any shape (a space, JSON): read as browsers write them, never all or nothing.
        held = cookie_parser(headers.get("cookie", "")).get(self.cookie)
        # A script (curl, an SSE client) shows the key in a header: another site's page cannot
        # set one on a request here without asking first (CORS), and is never told yes. Either
        # is enough (a browser's cookie from before `ui --new-key` must not refuse the header).
        scheme, _, token = headers.get("authorization", "").partition(" ")
        shown = token.strip() if scheme.lower() == "bearer" else ""
        if shown and (self._right(shown) or held is None):
            held = shown  # (a wrong one shown is "not this page's key", not "wants its key")
        if held is None or not self._right(held):
            await _refuse(send, 403, _NO_KEY if held is None else _WRONG_KEY)
            return
        if scope.get("method") == "POST":
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                await _refuse(
                    send, 415, "an intervention is sent as JSON (Content-Type: application/json)"
                )
                return
            origin = headers.get("origin")
            if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
                await _refuse(
                    send,
                    403,
                    f"an intervention from {origin} is refused: only the page itself sends them",
                )
                return
        await self.app(scope, receive, send)

    def _right(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.key.encode())


_NO_KEY = (
    "this page's server wants its key: open the link `starter.py ui` printed (it carries the "
    "key, which is also in $XSKY_HOME/ui-key); a script sends it as the header "
    "'Authorization: Bearer KEY'"
)
_WRONG_KEY = (
    "that is not this page's key: open the link `starter.py ui` printed (the key is in "
    "$XSKY_HOME/ui-key)"
)


async def _refuse(send: Send, status: int, error: str) -> None:
    """Refused as the page's other errors are said: ``{"ok": false, "error": …}``."""
    body = json.dumps({"ok": False, "error": error}).encode()
    await _send(send, status, body, [(b"content-type", b"application/json")])


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
