"""Connecting to Temporal with xsky's data converter, with an error a person can act on."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from cli.plans import UsageError
from xsky.config import Settings


class ConnectError(UsageError):
    """Temporal is not reachable; the message says how to start it."""


async def connect(settings: Settings) -> Client:
    try:
        return await Client.connect(
            settings.address, namespace=settings.namespace, data_converter=pydantic_data_converter
        )
    except Exception as e:  # noqa: BLE001 - the SDK raises RuntimeError for any connect failure
        raise ConnectError(
            f"cannot reach Temporal at {settings.address} (namespace {settings.namespace}): {str(e).splitlines()[0]}\n"
            "  start a local server with `python starter.py server` (or `make demo`), or set TEMPORAL_ADDRESS"
        ) from None
