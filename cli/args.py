"""Small argument helpers shared by commands."""

from __future__ import annotations

from xsky.errors import UsageError


def parse_pairs(items: list[str], flag: str) -> dict[str, str]:
    """``["k=v", …]`` → dict; a missing ``=`` is a usage error that shows the right form."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {item!r}: write it as {flag} name=value")
        pairs[key.strip()] = value
    return pairs
