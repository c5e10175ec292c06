"""Round 14's files-written-then-run reading asked for two common commands holding a {{…}}
value that run nothing written (review18): a copy into a folder read the folder's name as a
file written (`cp report.md docs/ && make docs` — make's target docs, asked), and a tar that
packs read as one that unpacks files of unknown names (`tar czf out.tgz notes.txt &&
./upload.sh out.tgz`, asked). What a copy into a folder or an unpacking tar makes is still
read: each below ran the value in bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.security.permissions import decide

V = 'printf %s "{{agent_1_result}}"'
ALLOWED = [
    f"{V} > report.md && cp report.md docs/ && make docs",
    f"{V} > notes.txt && tar czf out.tgz notes.txt && ./upload.sh out.tgz",
    f"{V} > notes.txt && tar -czf out.tgz notes.txt && ./upload.sh out.tgz",
    f"{V} > notes.txt && tar --create -f out.tar notes.txt && ./upload.sh out.tar",
]
RAN = [
    f"{V} > f.sh; mkdir -p bin; cp f.sh bin/; bash bin/f.sh",
    f"{V} > f.sh; tar cf a.tar f.sh; mkdir d; tar xf a.tar -C d; bash d/f.sh",
    f"{V} > a.txt; tar cf a.tar a.txt; mkdir d; tar -xf a.tar -C d; ./d/a.txt",
]


def _arguments(template: str) -> dict[str, object]:
    return rendered(template, "#!/bin/sh\ntouch ran\n")


@pytest.mark.parametrize("template", ALLOWED)
def test_nothing_written_is_run(template: str) -> None:
    decision = decide("shell", _arguments(template), ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "allow", decision.reason


@pytest.mark.parametrize("template", RAN)
def test_what_is_copied_or_unpacked_is_still_read(template: str, tmp_path: Path) -> None:
    arguments = _arguments(template)
    command = str(arguments["command"]).replace("./d/a.txt", "chmod +x d/a.txt; ./d/a.txt")
    env = {"HOME": str(tmp_path), **arguments["values"]}  # type: ignore[dict-item]
    bash(command, env, tmp_path)
    assert (tmp_path / "ran").exists()
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "ask"
