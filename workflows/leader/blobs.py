"""The leader's blobs: text larger than a payload (a large plan, a run's state or results),
written and read one part per activity on the leader's own queue, and the older states of a
run continued as new removed. Workflow code (deterministic)."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.artifacts import (
        PART_CHARS,
        BlobDrop,
        BlobPart,
        BlobPartRequest,
        BlobRef,
        blob_ref,
        split_text,
    )

# Blob parts in flight at once (each ≤ PART_CHARS): well under gRPC's 4 MB per workflow task.
BLOB_WAVE = 2
# The leader's own activities (blob parts, at most 200,000 characters each), on its task
# queue. A part is written or read in well under a second even on a slow disk; the timeout is
# how long a part given to a worker that died waits before it is given to another.
BLOB_ACTIVITY: dict[str, Any] = {
    "start_to_close_timeout": timedelta(seconds=10),
    "retry_policy": RetryPolicy(maximum_attempts=5),
}


# -- blobs: text larger than a payload, one part per activity -------------------------------------


async def save_blob(name: str, text: str, part_chars: int = PART_CHARS) -> BlobRef:
    """``text`` stored as ``name`` of the run, one part of ``part_chars`` per activity (parts
    over External Storage's threshold go through the history as claims, where the worker has
    it: STORED_PART_CHARS)."""
    ref = blob_ref(workflow.info().workflow_id, name, text, part_chars)
    parts = split_text(text, part_chars)
    # A few parts at a time: one workflow task must stay under gRPC's 4 MB.
    for at in range(0, len(parts), BLOB_WAVE):
        await asyncio.gather(
            *(
                workflow.execute_activity(
                    "leader_put",
                    BlobPart(ref=ref, index=i, text=parts[i]),
                    **BLOB_ACTIVITY,
                    summary=f"store {name} part {i + 1}/{ref.parts}",
                )
                for i in range(at, min(at + BLOB_WAVE, len(parts)))
            )
        )
    return ref


async def load_blob(ref: BlobRef) -> str:
    parts: list[str] = []
    for at in range(0, ref.parts, BLOB_WAVE):
        parts += await asyncio.gather(
            *(
                workflow.execute_activity(
                    "leader_get",
                    BlobPartRequest(ref=ref, index=i),
                    result_type=str,
                    **BLOB_ACTIVITY,
                    summary=f"read {ref.name} part {i + 1}/{ref.parts}",
                )
                for i in range(at, min(at + BLOB_WAVE, ref.parts))
            )
        )
    text = "".join(parts)
    if hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != ref.sha256:
        raise ApplicationError(
            f"the stored {ref.name} does not match its digest; the artifact store was changed",
            type="ArtifactMissing",
            non_retryable=True,
        )
    return text


async def drop_older_states(read: BlobRef) -> None:
    """Once an execution has read its state (``read``), the states older executions wrote are
    removed (best effort: a failure is logged, the run goes on). The one read stays: a reset
    of this execution to its start reads it again."""
    if not patched("state-per-execution"):
        return
    try:
        await workflow.execute_activity(
            "leader_drop",
            BlobDrop(run_id=read.run_id, prefix="state-", keep=read.name),
            result_type=int,
            **BLOB_ACTIVITY,
            summary="remove older states",
        )
    except ActivityError as e:
        workflow.logger.warning("older states of %s not removed: %s", read.run_id, e.cause or e)
