"""The client names the leader's handlers by hand (client/leader_calls.py): each name must be
one LeaderWorkflow defines, of the same kind, answering the type the client decodes."""

from __future__ import annotations

import subprocess
import sys

from temporalio import workflow

from client import leader_calls as calls
from workflows.leader import LeaderWorkflow
from xsky.leader.state import InterventionResult

DEFINED = workflow._Definition.must_from_class(LeaderWorkflow)


def _table() -> list[object]:
    return [
        v for v in vars(calls).values() if isinstance(v, calls.Query | calls.Update | calls.Signal)
    ]


def test_the_workflow_and_its_result_are_the_leaders() -> None:
    assert calls.WORKFLOW == DEFINED.name
    assert calls.RESULT is DEFINED.ret_type


def test_each_call_is_a_handler_of_its_kind_answering_what_the_client_decodes() -> None:
    table = _table()
    assert len(table) >= 20
    for call in table:
        if isinstance(call, calls.Query):
            assert call.name in DEFINED.queries, call
            assert DEFINED.queries[call.name].ret_type == call.answer, call
        elif isinstance(call, calls.Update):
            assert call.name in DEFINED.updates, call
            assert DEFINED.updates[call.name].ret_type is InterventionResult, call
        else:
            assert isinstance(call, calls.Signal)
            assert call.name in DEFINED.signals, call


def test_every_intervention_the_leader_answers_is_one_the_client_can_make() -> None:
    # define_role is the coordinator's (an activity asks it), not a person's.
    named = {c.name for c in _table() if isinstance(c, calls.Update)}
    assert set(DEFINED.updates) - named == {"define_role"}


def test_the_client_does_not_import_the_workflows_code() -> None:
    code = (
        "import sys, client.run, client.handle, client.start, client.outcome; "
        "print(sorted(m for m in sys.modules if m.startswith(('workflows', 'mcp'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out
