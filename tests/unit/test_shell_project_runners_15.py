"""A file a command writes, then read as code by the runner the same command starts, is asked
for in a command holding a {{…}} value (sec15: under v0.12.5 each ran the value in bash past
deny shell(touch:*), allowed — judged below by effect where the runner is installed): pytest
collects test_x.py and imports helpers.py (round 14 read only conftest.py), mkdocs runs its
hooks, and an existing Makefile's task runs src/x.py; tox, nox, rake, just, task, invoke,
gradlew, pre-commit, sphinx-build, coverage, ipython read their files as code by their docs.
A data file (`> report.md && make docs`: round 14's false ask) stays allowed. The 0.12.6
reading; the leader's replay keeps 0.12.5's (patch shell-reading-round-15)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

CODE = 'import os; os.system("touch ran")\n'
VENV_BIN = Path(sys.executable).parent  # (the venv's pytest, mkdocs)

# (template, seed files) — each ran the value under v0.12.5
BY_EFFECT = [
    ('printf %s "{{agent_1_result}}" > test_x.py; pytest -q -p no:cacheprovider', {}),
    (
        'printf %s "{{agent_1_result}}" > helpers.py; pytest -q -p no:cacheprovider',
        {"test_a.py": "import helpers\n\ndef test_a():\n    pass\n"},
    ),
    (
        'printf %s "{{agent_1_result}}" > tests/helpers.py && python3 -m pytest -q -p no:cacheprovider tests',
        {"tests/test_a.py": "import helpers\n\ndef test_a():\n    pass\n"},
    ),
    (
        'printf %s "{{agent_1_result}}" > src/x.py; make test',
        {"Makefile": "test:\n\tpython3 src/x.py\n"},
    ),
    (
        'printf %s "{{agent_1_result}}" > docs/hook.py; mkdocs build -q',
        {"mkdocs.yml": "site_name: x\nhooks: [docs/hook.py]\n", "docs/index.md": "# x\n"},
    ),
]
BY_DOCS = [
    'printf %s "{{agent_1_result}}" > tox.ini; tox',
    'printf %s "{{agent_1_result}}" > src/x.py; nox -s tests',
    'printf %s "{{agent_1_result}}" > Rakefile; rake',
    'printf %s "{{agent_1_result}}" > lib/x.rb; bundle exec rake test',
    'printf %s "{{agent_1_result}}" > justfile; just test',
    'printf %s "{{agent_1_result}}" > Taskfile.yml; task test',
    'printf %s "{{agent_1_result}}" > tasks.py; invoke test',
    'printf %s "{{agent_1_result}}" > build.gradle; ./gradlew test',
    'printf %s "{{agent_1_result}}" > .pre-commit-config.yaml; pre-commit run -a',
    'printf %s "{{agent_1_result}}" > x.py; uv run pytest',
    'printf %s "{{agent_1_result}}" > x.py; coverage run -m pytest',
    'printf %s "{{agent_1_result}}" > docs/conf.py; sphinx-build docs out',
]
DATA = [
    'printf %s "{{agent_1_result}}" > report.md && make docs',
    'printf %s "{{agent_1_result}}" > notes.txt; pytest -q',
    'printf %s "{{agent_1_result}}" > data/out.json && npm test',
    'printf %s "{{agent_1_result}}" > result.csv; make report',
    'echo "{{agent_1_result}}" >> log.txt; tox -e lint',
    'printf %s "{{agent_1_result}}" > config.yaml; make deploy',
    'pytest -k "{{agent_1_result}}"',
]


def _effect(arguments: dict[str, object]) -> str:
    return decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect


@pytest.mark.parametrize(("template", "seed"), BY_EFFECT)
def test_a_written_file_the_runner_reads_is_asked_for(
    template: str, seed: dict[str, str], tmp_path: Path
) -> None:
    arguments = rendered(template, CODE)
    assert _effect(arguments) == "ask"
    with read_as_of((0, 12, 5)):
        assert _effect(arguments) == "allow"
    runner = template.split("; ")[-1].split(" && ")[-1].split()[0]
    if shutil.which(runner, path=f"{VENV_BIN}:/usr/bin:/bin") is None:
        pytest.skip(f"{runner} is not installed")
    for name, text in seed.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    for folder in ("src", "docs", "tests"):
        (tmp_path / folder).mkdir(exist_ok=True)
    values: dict[str, str] = arguments["values"]  # type: ignore[assignment]
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(tmp_path), **values}
    bash(str(arguments["command"]), env, tmp_path, timeout=120)
    assert (tmp_path / "ran").exists()  # (what 0.12.5 allowed ran the value)


@pytest.mark.parametrize("template", BY_DOCS)
def test_other_runners_reading_a_written_file_are_asked_for(template: str) -> None:
    arguments = rendered(template, CODE)
    assert _effect(arguments) == "ask"
    with read_as_of((0, 12, 5)):
        assert _effect(arguments) == "allow"


@pytest.mark.parametrize("template", DATA)
def test_a_data_file_and_a_value_in_a_runners_words_stay_allowed(template: str) -> None:
    assert _effect(rendered(template, "a note")) == "allow"
