"""One describe, one board query: without the SDK's own retries, so that an outage during
them is noticed (and said, by :meth:`Run.follow`) at once."""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.common.v1 import Payloads, WorkflowExecution
from temporalio.api.query.v1 import WorkflowQuery
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    DescribeWorkflowExecutionResponse,
    QueryWorkflowRequest,
)
from temporalio.client import Client

from client._consts import QUERY_TIMEOUT
from xsky.leader.state import BoardPage, PageRequest


async def board_once(
    client: Client, workflow_id: str, request: PageRequest, timeout: timedelta = QUERY_TIMEOUT
) -> BoardPage:
    """The board query, once (``timeout``: under the sticky wait, Settings.query_timeout)."""
    response = await client.workflow_service.query_workflow(
        QueryWorkflowRequest(
            namespace=client.namespace,
            execution=WorkflowExecution(workflow_id=workflow_id),
            query=WorkflowQuery(
                query_type="task_board",
                query_args=Payloads(payloads=await client.data_converter.encode([request])),
            ),
        ),
        retry=False,
        timeout=timeout,
    )
    (page,) = await client.data_converter.decode(response.query_result.payloads, [BoardPage])
    return page


async def describe_once(client: Client, workflow_id: str) -> DescribeWorkflowExecutionResponse:
    """The run's description, once."""
    return await client.workflow_service.describe_workflow_execution(
        DescribeWorkflowExecutionRequest(
            namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
        ),
        retry=False,
        timeout=QUERY_TIMEOUT,
    )
