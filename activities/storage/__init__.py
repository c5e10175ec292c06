"""The store behind everything xsky keeps outside Temporal (xsky/storage.py): the local
directory by default, an S3-compatible object store with ``XSKY_STORE``."""

from __future__ import annotations

from xsky.config import Settings
from xsky.storage import ObjectStore, parse_store


def open_objects(settings: Settings, share_gid: int | None = None) -> ObjectStore:
    """The store this process's settings name (``share_gid``: see LocalStore)."""
    location = parse_store(settings.store)
    if location.s3:
        from activities.storage.s3 import S3Store

        return S3Store(location, settings.store_endpoint)
    from activities.storage.local import LocalStore

    return LocalStore(settings.artifacts, share_gid)


def io_threads(settings: Settings) -> None:
    """With an object store every read and write is a network call made in a thread
    (``asyncio.to_thread``): the default pool (a few threads on a small machine) would queue
    hundreds of attempts' calls behind each other, long enough for their heartbeats to time out.
    Call from the running event loop of a worker."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    if parse_store(settings.store).s3:
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=64, thread_name_prefix="xsky-io")
        )
