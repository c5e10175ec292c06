"""The leader's own shell decisions read a command as the release that made them read it.

A delegated approval and the rules an "allow for this run" answer adds are decided in workflow
code, from how the shell checker reads the command (xsky/security/shell_parse.py). A release
that changes the reading changes some of those decisions, and a run that made one before it
must replay it as it was made: each such release has a patch (workflows/patches.py), asked only
of a call that the newer reading decides apart from the one before it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from xsky.security.shell_parse import read_as_of

T = TypeVar("T")


def as_replayed(decide: Callable[[], T], patched: Callable[[str], bool]) -> T:
    """``decide()`` as the release that made it read the command: the newest reading, unless a
    change's patch says the run made the decision before that change and the reading before
    it decides otherwise (newest change first; each patch asked only where they differ)."""
    decided = decide()
    with read_as_of((0, 12, 5)):
        then = decide()
    if then != decided and not patched("shell-reading-round-15"):
        decided = then
    with read_as_of((0, 12, 4)):
        then = decide()
    if then != decided and not patched("shell-reading-round-14"):
        decided = then
    with read_as_of((0, 12, 3)):
        then = decide()
    if then != decided and not patched("shell-reading-round-13"):
        decided = then
    with read_as_of((0, 12, 2)):
        then = decide()
    if then != decided and not patched("shell-reading-round-12"):
        decided = then
    with read_as_of((0, 12, 1)):
        then = decide()
    if then != decided and not patched("shell-reading-round-11"):
        decided = then
    with read_as_of((0, 12, 0)):
        then = decide()
    if then != decided and not patched("shell-words-as-bash-reads"):
        decided = then
    return decided
