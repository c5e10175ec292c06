"""A module the command wrote is code the interpreter it then runs may import: `printf %s
"{{…}}" > helpers.py; python3 main.py` (main.py importing helpers, as a project's script
does) ran the value in bash past deny shell(touch:*), allowed (review18; also `python3 -m
unittest`, `node main.js` requiring ./helpers, and `> app/main.py; python3 -m app.main`: round 14 looked
for app.py). Round 14 read only the script itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

V = 'printf %s "{{agent_1_result}}"'
PY = "import os; os.system('touch ran')"
JS = "require('child_process').execSync('touch ran')"
# (template, the value, the project's files, the interpreter)
RAN = [
    (f"{V} > helpers.py; python3 main.py", PY, {"main.py": "import helpers\n"}, "python3"),
    (f"{V} > helpers.py && python3 -m unittest", PY, {"test_x.py": "import helpers\n"}, "python3"),
    (f"{V} > helpers.js; node main.js", JS, {"main.js": "require('./helpers')\n"}, "node"),
    (f"{V} > app/main.py && python3 -m app.main", PY, {"app/__init__.py": ""}, "python3"),
]
ALLOWED = [
    f"{V} > notes.md; python3 main.py",
    f"{V} > data.json && node main.js data.json",
    'python3 tool.py "{{agent_1_result}}" > out.txt',
]


def _arguments(template: str, value: str) -> dict[str, object]:
    return rendered(template, value)


@pytest.mark.parametrize(("template", "value", "files", "needs"), RAN)
def test_the_value_runs_in_bash(
    template: str, value: str, files: dict[str, str], needs: str, tmp_path: Path
) -> None:
    found = shutil.which(needs)
    if found is None:
        pytest.skip(f"{needs} is not installed")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    arguments = _arguments(template, value)
    env = {"PATH": f"{Path(found).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
           **arguments["values"]}  # type: ignore[dict-item]  # fmt: skip
    bash(str(arguments["command"]), env, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "value", "files", "needs"), RAN)
def test_it_is_asked_for(template: str, value: str, files: dict[str, str], needs: str) -> None:
    arguments = _arguments(template, value)
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "ask", decision.reason
    with read_as_of((0, 12, 4)):  # as 0.12.4 read it (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"


@pytest.mark.parametrize("template", ALLOWED)
def test_other_files_stay_allowed(template: str) -> None:
    decision = decide("shell", _arguments(template, "x"), ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "allow", decision.reason
