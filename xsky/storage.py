"""One storage interface for everything xsky keeps outside Temporal: results, blobs, attempt
ledgers and kept outcomes, checkpoints, agent logs, screenshots, MCP discoveries, workspace
snapshots.

Two implementations (activities/storage/): a local directory (the default: ``XSKY_ARTIFACTS``,
one machine or a shared disk) and any S3-compatible object store (``XSKY_STORE=s3://bucket/prefix``,
endpoint and credentials from the standard AWS variables), so workers on machines with no
shared disk find what another stored. Keys are relative paths, ``<run>/<agent>/<file>``
(xsky/artifacts.py), the same in both: a run's objects are everything under ``<run>/``.

Pure: the protocol, the keys and the parsing of ``XSKY_STORE``; no I/O here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from xsky.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path


# ``put_if``'s tag for "whatever version is there" (an unconditional write that returns its tag).
ANY_VERSION = "*"


@runtime_checkable
class ObjectStore(Protocol):
    """Where xsky's objects live. Every write is atomic (a reader sees the old object or the
    new one, never a part) and idempotent (the same key with the same bytes is a no-op in
    effect: a retried activity rewrites what it wrote). Reads of a missing key raise
    FileNotFoundError."""

    where: str  # for messages: "the artifact store at /srv/xsky/artifacts", "s3://bucket/xsky"
    shared: bool  # do workers on other machines see these objects (an object store: yes)

    def put(self, key: str, data: bytes, *, sync: bool = False) -> None:
        """Replace ``key`` with ``data`` (``sync``: durable before this returns)."""
        ...

    def put_new(self, key: str, data: bytes) -> bool:
        """Write ``key`` only if no object has that key yet, atomically across machines; True
        when this call made it, False when it was there already (another writer won). Durable
        when it returns. What claims are made of: one winner, whoever races."""
        ...

    def get(self, key: str) -> bytes: ...

    def get_tagged(self, key: str) -> tuple[bytes, str]:
        """The object and its version's tag (S3's ETag; a local file's digest): one read, as
        :meth:`get` — what a later :meth:`put_if` names to write only over this version."""
        ...

    def put_if(self, key: str, data: bytes, tag: str | None, *, sync: bool = False) -> str | None:
        """Replace ``key`` with ``data`` only while it is the version ``tag`` names (None: only
        while there is no object; :data:`ANY_VERSION`: whatever is there) — decided by the
        store itself (S3's If-Match / If-None-Match), so a write that arrives late, after
        another writer's, is refused rather than landing over it. One write, as :meth:`put`
        (``sync``: durable when it returns, as there). The new version's tag; None when the
        condition failed (nothing was written)."""
        ...

    def chunks(self, key: str) -> Iterator[bytes]:
        """The object in pieces, for large objects (a workspace snapshot's files)."""
        ...

    def exists(self, key: str) -> bool: ...

    def keys(self, prefix: str) -> list[str]:
        """Every key that starts with ``prefix`` (a folder ``run/`` or a name ``run/_leader/state-``)."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key`` (and what was appended to it); a missing key is no error."""
        ...

    def append(self, key: str, data: bytes, *, sync: bool = False) -> None:
        """Add ``data`` at the end of an appendable object (a ledger, an agent log). Writers on
        several machines may append to one key; each append is whole."""
        ...

    def appended(self, key: str) -> bytes:
        """Everything appended to ``key``, in the order written (b"" for none)."""
        ...

    def local(self, key: str) -> Path | None:
        """The file that holds ``key`` on this machine, when the store is a local directory."""
        ...


@dataclass(frozen=True)
class StoreLocation:
    """Where ``XSKY_STORE`` says the store is: a local directory or a bucket and prefix."""

    url: str  # "s3://bucket/prefix", or "" for the local directory
    bucket: str = ""
    prefix: str = ""

    @property
    def s3(self) -> bool:
        return bool(self.url)


def parse_store(value: str | None) -> StoreLocation:
    """``XSKY_STORE``: unset or empty for the local directory, ``s3://bucket[/prefix]`` for an
    S3-compatible object store; anything else is one sentence saying how to write it."""
    raw = (value or "").strip()
    if not raw:
        return StoreLocation("")
    if not raw.startswith("s3://"):
        raise UsageError(
            f"XSKY_STORE={raw!r} is not an object store xsky knows; set it to s3://BUCKET/PREFIX "
            "(any S3-compatible store, with AWS_ENDPOINT_URL for one that is not AWS), or leave it "
            "unset for the local directory XSKY_ARTIFACTS"
        )
    bucket, _, prefix = raw[len("s3://") :].partition("/")
    prefix = prefix.strip("/")
    if not bucket or any(part in ("", ".", "..") for part in prefix.split("/") if prefix):
        raise UsageError(
            f"XSKY_STORE={raw!r} names no bucket (or has an empty or relative folder); write it "
            "as s3://BUCKET or s3://BUCKET/PREFIX"
        )
    return StoreLocation(f"s3://{bucket}" + (f"/{prefix}" if prefix else ""), bucket, prefix)


def run_prefix(run_component: str) -> str:
    """The folder of one run's objects (``run_component``: the run id as a safe component)."""
    return run_component.rstrip("/") + "/"
