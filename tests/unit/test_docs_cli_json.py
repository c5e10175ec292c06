"""docs/cli.md names every command that does not take `--json`, and only those."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from cli.main import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _without_json(name: str, parser: argparse.ArgumentParser) -> list[str]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        return [
            c
            for word, sub in subs[0].choices.items()
            for c in _without_json(f"{name} {word}".strip(), sub)
        ]
    options = {o for a in parser._actions for o in a.option_strings}
    return [] if "--json" in options else [name]


def test_the_commands_without_json_are_the_ones_the_doc_names() -> None:
    text = DOC.read_text()
    start = text.index("Every command takes `--json` for scripts but")
    named = set(re.findall(r"`([a-z][a-z -]*)`", text[start : text.index("mistakes", start)]))
    named -= {"--json"}
    assert named == set(_without_json("", build_parser()))
