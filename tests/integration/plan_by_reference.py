"""How clients before v0.4.0 started a large plan: stored as XML in the artifact store and
passed as ``RunInput.plan_ref``. v0.4.0's client passes the plan inline and Temporal's External
Storage moves it to the store; the leader still reads ``plan_ref`` for runs such clients
started (and their histories), which these tests keep exercising."""

from __future__ import annotations

from activities.artifacts import open_store, put_blob
from xsky.artifacts import blob_ref
from xsky.config import Settings
from xsky.plan.xml import workflow_to_xml
from xsky.runs import RunInput

INPUT_LIMIT = 512 * 1024


def by_reference(
    inp: RunInput, settings: Settings, workflow_id: str, limit: int = INPUT_LIMIT
) -> RunInput:
    """The run's input, with a large plan stored as XML in the artifact store."""
    if inp.workflow is None or len(inp.model_dump_json(by_alias=True)) <= limit:
        return inp
    xml = workflow_to_xml(inp.workflow)
    ref = blob_ref(workflow_id, "plan-input", xml)
    put_blob(open_store(settings), ref, xml)
    return inp.model_copy(update={"workflow": None, "plan_ref": ref})
