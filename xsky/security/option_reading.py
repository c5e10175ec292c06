"""How a program reads its arguments: which words are options, which are their values, which are
plain arguments.

A checker that decides what a program will do must read its argv the way the program does:
getopt's combined short options (``-xzf a.tgz`` is ``-x -z -f a.tgz``), a value attached or in
the next word (``-fa.tgz``, ``-f a.tgz``), ``--long=value``, ``--`` ending the options, values
only attached (``sed -i.bak``: ``-in`` is ``-i`` with the suffix ``n``), tar's old style (``tar
czf a.tgz dir``), single-dash words read whole (``find -name``, ``openssl -in``), and programs
whose options end at their first plain argument (an interpreter's script, git's subcommand:
what follows is theirs).

A reading is only as good as its table of which options take a value, so the table lists only
options known for certain (:mod:`xsky.security.program_forms`) and every other option is
reported as unknown, never guessed. An unknown option's arity is unknown too: the words after
it may be read wrongly, which is harmless, because a call with an unknown option is never
approved on the reading's word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NUMBER = "-NUM"  # the name a count such as `head -5` or `git log -3` is read as


@dataclass(frozen=True)
class Options:
    """The options a program is known to take, and how it reads them."""

    flags: frozenset[str] = frozenset()  # no value ("-n", "--quiet"); "--x=v" is accepted
    valued: frozenset[str] = frozenset()  # a value attached or in the next word ("-f", "--file")
    attached: frozenset[str] = frozenset()  # a value only when attached ("-i.bak", "-j4")
    combined: bool = True  # getopt: -abc is -a -b -c; False: a word is one option (find -name)
    numeric: bool = False  # `-5` is a count
    first_positional_ends: bool = False  # options end at the first plain argument
    old_style: bool = False  # tar: a first word without a dash is a bundle of option letters
    ends: frozenset[str] = frozenset()  # options after which every word is a plain argument

    def knows(self, name: str) -> bool:
        return name in self.flags or name in self.valued or name in self.attached


@dataclass(frozen=True)
class Option:
    name: str  # as the program knows it: "-f", "--file", "-name"
    value: str | None
    word: str  # the word it was read from


@dataclass(frozen=True)
class Reading:
    options: tuple[Option, ...]
    positionals: tuple[str, ...]
    unknown: tuple[Option, ...]  # options neither the table nor the rule's own words know


def rule_words(text: str) -> set[str]:
    """The words a rule's text makes known, as written: ``--maxfail=1`` is that word only, a
    bare ``--maxfail`` the option with any value, as is ``--maxfail=*`` (a glob rule's)."""
    words = set(text.split())
    for word in list(words):
        name, eq, value = word.partition("=")
        if word.startswith("-") and eq and any(c in value for c in "*?["):
            words.add(name)
    return words


def read(args: Sequence[str], spec: Options, extra: frozenset[str] = frozenset()) -> Reading:
    """Read ``args`` (argv without the program's name) as ``spec`` says the program reads them.

    ``extra``: words a rule itself writes. An option named there, or written there whole as the
    call writes it (``-la``, ``--maxfail=1``), is known — read as any other option, so what it is
    (a form the table refuses) still shows."""
    options: list[Option] = []
    positionals: list[str] = []
    unknown: list[Option] = []
    rest = list(args)
    if spec.old_style and rest and rest[0] and not rest[0].startswith("-"):
        bundle, rest = rest[0], rest[1:]
        for letter in bundle:
            name = "-" + letter
            taken = rest.pop(0) if name in spec.valued and rest else None
            option = Option(name, taken, bundle)
            options.append(option)
            if not spec.knows(name) and name not in extra:
                unknown.append(option)
    ended = False
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if ended or word == "-" or not word.startswith("-"):
            positionals.append(word)
            ended = ended or spec.first_positional_ends
            continue
        if word == "--":
            ended = True
            continue
        if spec.numeric and word[1:].isdigit():
            options.append(Option(NUMBER, word[1:], word))
            continue
        if word.startswith("--") or not spec.combined:
            name, eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
            value: str | None = attached if eq else None
            if name in spec.valued and not eq:
                value = rest[i] if i < len(rest) else None
                i += 1
            option = Option(name, value, word)
            options.append(option)
            if not spec.knows(name) and name not in extra and word not in extra:
                unknown.append(option)
            ended = ended or name in spec.ends
            continue
        j = 1
        while j < len(word):
            name = "-" + word[j]
            j += 1
            if name in spec.valued or name in spec.attached:
                given: str | None = None
                if j < len(word):
                    given = word[j:]
                elif name in spec.valued and i < len(rest):
                    given = rest[i]
                    i += 1
                options.append(Option(name, given, word))
                ended = ended or name in spec.ends
                break
            option = Option(name, None, word)
            options.append(option)
            if name not in spec.flags and name not in extra and word not in extra:
                unknown.append(option)  # its arity is unknown: the rest is read as more letters
    return Reading(tuple(options), tuple(positionals), tuple(unknown))
