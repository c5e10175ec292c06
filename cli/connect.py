"""Connecting to Temporal for the CLI and the worker (the connection itself is in :mod:`xsky.client`)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.runtime import Runtime

from xsky.client import connect_client
from xsky.config import Settings
from xsky.errors import ConnectError


async def connect(settings: Settings, runtime: Runtime | None = None) -> Client:
    """A client with xsky's data converter; a ConnectError that says how to start a server."""
    return await connect_client(settings, runtime)


__all__ = ["ConnectError", "connect"]
