"""http_get: fetch a URL (text), with a size cap and a timeout."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from activities.sandbox import egress
from activities.tools import (
    ToolContext,
    ToolError,
    ToolResult,
    cap_text,
    optional_number,
    require_str,
)
from xsky.outcomes import http_status_retryable

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
MAX_REDIRECTS = 5


async def http_get(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    url = require_str(args, "url", "http_get", '{"tool": "http_get", "url": "https://example.com"}')
    if not url.startswith(("http://", "https://")):
        raise ToolError(f"http_get only fetches http:// and https:// URLs, not {url!r}")
    timeout = optional_number(args, "timeout", 30, 0.1, 600, "http_get")
    limit = int(
        optional_number(args, "maxBytes", DEFAULT_MAX_BYTES, 1, 64 * 1024 * 1024, "http_get")
    )
    allow_failure = bool(args.get("allowFailure", False))
    ctx.heartbeat(f"GET {url}")
    try:
        # Through the egress proxy (a process of its own): it resolves each hop's host and
        # refuses metadata and Temporal addresses, and private ones without an exact rule,
        # however the URL spells them. The URL carries the endpoint's token.
        async with contextlib.AsyncExitStack() as stack:
            proxy = (
                await stack.enter_async_context(egress.serving(ctx.egress, ctx.record))
                if ctx.egress
                else None
            )
            client = await stack.enter_async_context(
                httpx.AsyncClient(
                    follow_redirects=False, timeout=timeout, trust_env=False, proxy=proxy
                )
            )
            # Redirects are followed here, one hop at a time, so each hop meets the deny list.
            for _ in range(MAX_REDIRECTS + 1):
                if ctx.blocked_url is not None and ctx.blocked_url(url):
                    raise ToolError(
                        f"GET {url} is not allowed: the host is denied (a deny rule, or a link-local address)"
                    )
                async with client.stream(
                    "GET", url, headers={"User-Agent": "xsky-agent/0.1"}
                ) as resp:
                    # The proxy's own answer to a plain-HTTP request (it takes the mark out of
                    # servers' answers; an https answer is the server's, through a tunnel).
                    mark = (
                        resp.headers.get("x-xsky-egress")
                        if proxy is not None and resp.url.scheme == "http"
                        else None
                    )
                    if mark in ("refused", "unreachable"):
                        said = (
                            (await _head_of(resp, REFUSAL_BYTES)).decode(errors="replace").strip()
                        )
                        if mark == "refused":  # a rule or the address policy: not retried
                            raise ToolError(f"GET {url}: {said}")
                        raise ToolError(f"GET {url} could not connect: {said}", retryable=True)
                    location = resp.headers.get("location")
                    if resp.is_redirect and location:
                        url = str(resp.url.join(location))
                        if not url.startswith(("http://", "https://")):
                            raise ToolError(f"GET redirected to {url!r}, which is not http(s)")
                        continue
                    body = bytearray()
                    async for chunk in resp.aiter_bytes():
                        body += chunk
                        if len(body) > limit:
                            break
                    status, ctype, final_url = (
                        resp.status_code,
                        resp.headers.get("content-type", ""),
                        str(resp.url),
                    )
                    encoding = resp.encoding or "utf-8"
                    break
            else:
                raise ToolError(f"GET {url}: more than {MAX_REDIRECTS} redirects")
    except httpx.ProxyError as e:  # a refused CONNECT (https): its status line says why
        raise ToolError(f"GET {url}: xsky's egress proxy answered {e}") from None
    except egress.EgressUnavailable as e:
        raise ToolError(f"GET {url} could not go out: {e}", retryable=True) from None
    except httpx.TimeoutException:
        raise ToolError(f"GET {url} timed out after {timeout:g}s", retryable=True) from None
    except httpx.HTTPError as e:
        raise ToolError(f"GET {url} failed: {e}", retryable=True) from None
    text, _ = cap_text(bytes(body[:limit]).decode(encoding, errors="replace"), limit, "body")
    details = {"status": status, "contentType": ctype, "url": final_url, "bytes": len(body)}
    if status >= 400 and not allow_failure:
        raise ToolError(
            f"GET {url} answered HTTP {status}",
            retryable=http_status_retryable(status),
            details=details,
        )
    return ToolResult(text, details)


REFUSAL_BYTES = 4096  # of the proxy's refusal: one sentence


async def _head_of(resp: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of a body, however long it is."""
    body = bytearray()
    async for chunk in resp.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])
