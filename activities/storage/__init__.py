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
