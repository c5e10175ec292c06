"""The sed script reader (xsky/security/sed_scripts.py) against GNU sed itself.

GNU sed's ``--sandbox`` refuses a script holding an ``e``, ``w``, ``W``, ``r`` or ``R`` command
(or an ``s///e``/``s///w`` flag) before it runs anything, so it tells which scripts run programs
or write files. Scripts are built from sed's pieces (no ``r``/``R``, which only read): wherever
GNU sed accepts a script and its sandbox refuses it, the reader must find what runs or writes
(or refuse to read it) — and where the sandbox accepts it, the reader must find nothing. With
no input line, sed runs none of the script's commands; ``w`` files land in a temporary folder.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xsky.security.sed_scripts import SedScriptError, effects

SED = shutil.which("sed")


def gnu_sed() -> bool:
    if SED is None:
        return False
    out = subprocess.run([SED, "--version"], capture_output=True, text=True, check=False)
    return "GNU sed" in out.stdout


pytestmark = pytest.mark.skipif(not gnu_sed(), reason="needs GNU sed (its --sandbox is the oracle)")

PIECES = [
    "s/a/b/", "s|e|w|", "s/x/y/g", "s/a/b/e", "s/a/b/ge", "s/a/b/ e", "s/e/w/w out",
    "s,a\\,b,c,", "s/a/b/2p", "e", "e echo", "1", "$", "!", "{", "}", ";", "\n", " ", "/e/",
    "\\|w|", "\\,e,", "w out", "W out", "p", "g", "y/ab/cd/", "y,e,w,", ":e", ":a", "be", "ta",
    "#e", "a e", "a\\", "i\\\n", "c\\", "a\\e", "I", ",", "2", "0~3", "~2", "+1", "q", "q5", "l",
    "l 5", "=", "n", "N", "x", "z", "F", "\\", "e\\", "s/\\n/e/", "v", "v 4.2",
]  # fmt: skip


def run(script: str, *options: str, cwd: Path) -> int:
    assert SED is not None
    done = subprocess.run(
        [SED, "-n", *options, "-e", script],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=cwd,
        timeout=10,
        check=False,
    )
    return done.returncode


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sed")


@settings(max_examples=800, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=8))
def test_the_reader_finds_what_gnu_seds_sandbox_refuses(pieces: list[str], folder: Path) -> None:
    script = "".join(pieces)
    if run(script, cwd=folder) != 0:
        return  # not sed: the reader may say anything but "harmless" (tested below)
    refused = run(script, "--sandbox", cwd=folder) != 0
    try:
        found = effects(script)
    except SedScriptError:
        return  # unreadable is never approved
    assert bool(found) == refused, (script, found)


@pytest.mark.parametrize(
    ("script", "kinds"),
    [
        ("e", ["runs"]),
        ("1e id", ["runs"]),
        ("$!{e id\n}", ["runs"]),
        ("s/a/b/e", ["runs"]),
        ("s|a|b|ge", ["runs"]),
        ("s/a/b/w out", ["writes"]),
        ("w out", ["writes"]),
        ("1a e id", []),
        ("1i\\\ne id", []),
        ("s/e/w/", []),
        ("w /dev/stdout", []),
        (":a;N;$!ba;s/\\n/ /g", []),
        ("#x\\\ne", ["runs"]),  # a comment ends at its newline, a backslash before it or not
        (":a#e e", []),  # a label ends at #, and the rest is a comment
        (":a;1{ba}", []),  # ... or at }, which closes the block
        ("v 4.2#e", []),
    ],
)
def test_known_scripts(script: str, kinds: list[str], folder: Path) -> None:
    assert [e.kind for e in effects(script)] == kinds
    assert run(script, cwd=folder) == 0  # each is sed


@pytest.mark.parametrize("script", ["s/a/b", "k", "{p", "p}", "s/a/b/x", "y/a/", "1,", "a"])
def test_what_is_not_sed_is_refused(script: str, folder: Path) -> None:
    with pytest.raises(SedScriptError):
        effects(script)
    assert run(script, cwd=folder) != 0  # GNU sed refuses it too
