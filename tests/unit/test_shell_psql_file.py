"""psql given -f FILE runs the file's commands and reads nothing from its input (psql(1)): in a
command holding a {{…}} value, `psql -f migrate.sql -v "name={{…}}"` was asked for as a
program reading a value as commands from its input (round 14's reader list; review18). A value
piped to `psql`, `psql -f -`, or written to the file it runs (`\\!` runs a command) is still
asked for; 0.12.4's reading is unchanged."""

from __future__ import annotations

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, rendered
from xsky.security.permissions import decide

ALLOWED = [
    'psql -d app -f migrate.sql -v "name={{agent_1_result}}"',
    'psql "$DATABASE_URL" -f migrate.sql && echo "{{agent_1_result}}"',
    'psql --file=q.sql -v "a={{agent_1_result}}"',
    'psql -fq.sql -v "a={{agent_1_result}}"',
]
ASKED = [
    'echo "{{agent_1_result}}" | psql -d app',
    'echo "{{agent_1_result}}" | psql -f -',
    'echo "{{agent_1_result}}" | psql --file=/dev/stdin',
    'printf %s "{{agent_1_result}}" > x.sql; psql -f x.sql',
    'printf %s "{{agent_1_result}}" > x.sql && psql -d app --file=x.sql',
    'echo "{{agent_1_result}}" | mysql app',
]


def _arguments(template: str) -> dict[str, object]:
    return rendered(template, "\\! touch ran")


@pytest.mark.parametrize("template", ALLOWED)
def test_a_file_given_by_f_is_no_input(template: str) -> None:
    decision = decide("shell", _arguments(template), ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "allow", decision.reason


@pytest.mark.parametrize("template", ASKED)
def test_a_value_psql_may_run_is_asked_for(template: str) -> None:
    assert decide("shell", _arguments(template), ROLE, DENY_TOUCH, "/ws").effect == "ask"
