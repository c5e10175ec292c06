"""Delegated approvals (xsky/security/delegation.py): the leader may approve a call only where
the person's delegated rules alone allow it — the same grammar as allow rules, every part of
a compound command covered, deny rules winning, nothing a role holds counting."""

from __future__ import annotations

import pytest

from xsky.security.delegation import delegation


@pytest.mark.parametrize(
    ("tool", "arguments", "delegated", "deny", "covered"),
    [
        ("shell", {"command": "make test -j2"}, ["shell(make test:*)"], [], True),
        ("shell", {"command": "make test && make deploy"}, ["shell(make test:*)"], [], False),
        ("shell", {"command": "make test; rm -rf /"}, ["shell(make test:*)"], [], False),
        (
            "shell",
            {"command": "make test --deploy"},
            ["shell(make test:*)"],
            ["shell(make test --deploy)"],
            False,
        ),
        (
            "shell",
            {"command": "curl $(cat key)"},
            ["shell(curl:*)"],
            [],
            False,
        ),  # not parsed: a person's
        ("file_write", {"path": "out/a.txt", "content": "x"}, ["file_write(out/**)"], [], True),
        ("file_write", {"path": "../x", "content": "x"}, ["file_write(**)"], [], False),
        (
            "http_get",
            {"url": "https://api.example.com/v1"},
            ["http_get(domain:example.com)"],
            [],
            True,
        ),
        ("http_get", {"url": "https://evil.test/"}, ["http_get(domain:example.com)"], [], False),
        ("mcp__fs__read_file", {"path": "a"}, ["mcp__fs"], [], True),
        ("mcp__fs__write_file", {"path": "a"}, ["mcp__fs__read_file"], [], False),
        ("mcp__fs__read_file", {"path": "a"}, ["mcp__fs"], ["mcp__fs__read_file"], False),
        ("shell", {"command": "ls"}, [], [], False),
        ("shell", {"command": "ls"}, ["not a rule ("], [], False),
    ],
)
def test_only_what_the_delegated_rules_alone_allow_is_covered(
    tool: str, arguments: dict, delegated: list[str], deny: list[str], covered: bool
) -> None:
    got, why = delegation(tool, arguments, delegated, deny, "/ws")
    assert got is covered, why
    assert why  # always says why
