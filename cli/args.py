"""Small argument helpers shared by commands."""

from __future__ import annotations

import argparse
import difflib
import os
import re
from collections.abc import Sequence
from typing import NoReturn

from xsky.errors import UsageError


def parse_pairs(items: list[str], flag: str) -> dict[str, str]:
    """``["k=v", …]`` → dict; a missing ``=`` is a usage error that shows the right form, and
    so is a name given twice (the last one won, silently: which was meant is not ours to guess)."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {item!r}: write it as {flag} name=value")
        if key.strip() in pairs:
            raise UsageError(
                f"{flag} {key.strip()} is given twice ({pairs[key.strip()]!r} and {value!r}); "
                "keep one"
            )
        pairs[key.strip()] = value
    return pairs


class Parser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a mistyped command or choice (Python 3.11's
    argparse has no ``suggest_on_error``)."""

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.fullmatch(message)
        if found:
            name, value, choices = found[1], found[2], re.findall(r"'([^']*)'", found[3])
            what = (
                f"unknown {self.prog.removeprefix('starter.py').strip() + ' ' if self.prog != 'starter.py' else ''}"
                f"command {value!r}"
                if name in ("COMMAND", "ACTION")
                else f"{name} {value!r} is not one of {', '.join(choices)}"
            )
            message = what + _did_you_mean(value, choices, quote=True)
        # The sentence and where to look, not argparse's usage block first: with this many
        # options it is 10-20 lines that push the one that matters off the screen.
        hint = (
            ""
            if "--help" in message or "did you mean" in message
            else f" (`{self.prog} --help` shows what it takes)"
        )
        self.exit(2, f"{self.prog}: error: {message}{hint}\n")


_INVALID_CHOICE = re.compile(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)", re.S)


def _did_you_mean(value: str, choices: Sequence[str], quote: bool = False) -> str:
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    if not close:
        return ""
    return f" — did you mean {close[0]!r}?" if quote else f" — did you mean {close[0]}?"


def _command_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The parser of the (sub)command that was given."""
    command = parser
    while True:
        subs = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if not subs or name not in subs[0].choices:
            return command
        command = subs[0].choices[name]


def late_positionals(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]
) -> list[str]:
    """Words argparse left over that are the command's optional positionals, given after an
    option (``budget RUN --task T-1 tokens=5000``: argparse gives ``LIMITS`` nothing once it
    has seen ``RUN`` alone, and refuses ``tokens=5000``) — set on ``args``, in order; what is
    left is returned. The messages xsky prints write commands in this order."""
    command = _command_parser(parser, args)
    open_slots = [
        a
        for a in command._actions
        if not a.option_strings
        and a.nargs in ("?", "*")
        and getattr(args, a.dest, None) in (None, [], a.default)  # not given
    ]
    left: list[str] = []
    words = iter(extras)
    for word in words:
        if word.startswith("-") and word != "-":
            left.append(word)
            # an unknown option's value stays with it (reject_unknown says which)
            if "=" not in word:
                nxt = next(words, None)
                if nxt is not None:
                    left.append(nxt)
            continue
        if not open_slots:
            left.append(word)
            continue
        slot = open_slots[0]
        try:  # as argparse takes a positional: its type, then its choices
            value = command._get_value(slot, word)
            command._check_value(slot, value)
        except argparse.ArgumentError:
            left.append(word)  # said by reject_unknown, as any word the command does not take
            continue
        if slot.nargs == "?":
            setattr(args, slot.dest, value)
            open_slots.pop(0)
        else:
            setattr(args, slot.dest, [*(getattr(args, slot.dest, None) or []), value])
    return left


def reject_unknown(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]
) -> NoReturn:
    """What ``parse_args`` would refuse, said by the (sub)command's own parser, with the
    nearest option it has: ``unknown option --folow — did you mean --follow?``."""
    command = _command_parser(parser, args)
    options = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
    flags = {o for a in command._actions if a.nargs == 0 for o in a.option_strings}
    said = []
    after_option = False  # the word after an unknown option is taken as its value, not said
    for extra in extras:
        if extra.startswith("-") and extra != "-":
            flag = extra.split("=", 1)[0]
            hint = _did_you_mean(flag, options) or f"; `{command.prog} --help` lists its options"
            said.append(f"unknown option {flag}{hint}")
            meant = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
            # (`--taks hi`: hi is the value of the --task it meant; `--folow x`: x is not)
            after_option = "=" not in extra and not (meant and meant[0] in flags)
        elif after_option:
            after_option = False
        else:
            said.append(
                f"unexpected argument {extra!r}; `{command.prog} --help` shows what it takes"
            )
    split = _split_path(args, extras)
    if split is not None:  # a path with spaces, unquoted: the shell made words of it
        said = [
            f"{split[0]!r} is no file, and with what follows it is one: a path with spaces is "
            f'given in quotes — "{split[1]}"'
        ]
    command.error("; ".join(said))


def _split_path(args: argparse.Namespace, extras: list[str]) -> tuple[str, str] | None:
    """(the positional, the file it and the words after it name) when a path with spaces was
    given unquoted (`run my plans/a.xml`: 'my' is taken for the plan, 'plans/a.xml' is left
    over — walk10), else None."""
    words = [e for e in extras if not e.startswith("-")]
    if not words or len(words) != len(extras):
        return None
    for value in vars(args).values():
        if not isinstance(value, str) or not value or os.path.exists(value):
            continue
        joined = " ".join([value, *words])
        if os.path.isfile(joined):
            return value, joined
    return None
