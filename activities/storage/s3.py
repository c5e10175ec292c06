"""Any S3-compatible object store (AWS S3, MinIO, R2, GCS's S3 API) through ``obstore``.

``XSKY_STORE=s3://bucket/prefix``; the endpoint, region and credentials come from the standard
AWS variables (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN`` …), which obstore reads itself. A single PUT is
atomic in S3 (a reader sees the old object or the new one), and writing the same bytes again
changes nothing. An appendable object is a folder of small objects, ``<key>.parts/<time>-<random>``,
read back in the order written: several machines may append to one ledger without a lock.
"""

from __future__ import annotations

import contextlib
import errno
import re
import secrets as random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import obstore
from obstore.exceptions import AlreadyExistsError, GenericError, PreconditionError
from obstore.store import S3Store as ObS3Store

from activities.sandbox import secrets
from xsky.storage import ANY_VERSION, StoreLocation

PARTS = ".parts/"  # the suffix of an appendable object's folder of pieces
CHUNK = 1024 * 1024


class StoreUnavailable(OSError):
    """The store failed a request after obstore's own retries (a 5xx for a while, a timeout,
    refused connections): an OSError with ``errno.EAGAIN``, so an attempt waits for the store
    as it waits for a full disk (activities/agents/storage.py) instead of failing — a failure
    there clears a command's record, and the command ran again once the store was back."""


class StoreRefused(OSError):
    """The store refused a request as it will refuse it again (a 4xx, a redirect to another
    region): not waited for — the attempt fails saying so."""


# What obstore's GenericError says of a store that may answer again: its retries exhausted, a
# 5xx, no connection, a timeout — and of one that will not (a 4xx, a wrong region's redirect).
_REFUSED = re.compile(r"status code: [34]\d\d|redirect", re.I)


@contextlib.contextmanager
def _answering(where: str, writing: bool = False) -> Iterator[None]:
    try:
        yield
    except GenericError as e:
        said = (str(e).strip().splitlines() or ["no answer"])[0][:300]
        if _REFUSED.search(said) and "after " not in said.split(" - ", 1)[0]:
            # (a 400 for a bad bucket name, an object too large, a region's redirect: waiting
            # does not change the answer; a 4xx obstore retried first — "after N retries" — is
            # a 429 or a 408, which may pass)
            raise StoreRefused(errno.EINVAL, said, where) from e
        raise StoreUnavailable(errno.EAGAIN, said, where) from e
    except FileNotFoundError as e:
        if not writing:
            raise
        # A write is "not found" only when its bucket is (NoSuchBucket: a store wiped, a bucket
        # not made yet): the store's problem, waited for, not a missing key.
        said = (str(e).strip().splitlines() or ["not found"])[0][:300]
        raise StoreUnavailable(errno.EAGAIN, f"its bucket is missing: {said}", where) from e


class S3Store:
    shared = True

    def __init__(self, location: StoreLocation, endpoint: str | None = None):
        self.location = location
        self.where = location.url
        # A plain-http endpoint (a local MinIO, moto in the tests) must be allowed explicitly.
        options = {"allow_http": True} if endpoint and endpoint.startswith("http://") else None
        # worker.py takes secrets out of its environment (agents could read them there) and
        # keeps them aside: the secret key and session token come from there.
        given = {
            field: value
            for field, name in (
                ("secret_access_key", "AWS_SECRET_ACCESS_KEY"),
                ("session_token", "AWS_SESSION_TOKEN"),
            )
            if (value := secrets.get(name))
        }
        self._store = ObS3Store.from_url(
            location.url,
            client_options=options,  # type: ignore[arg-type]
            **({"endpoint": endpoint} if endpoint else {}),  # type: ignore[arg-type]
            **given,  # type: ignore[arg-type]
        )

    def local(self, key: str) -> Path | None:
        return None

    def check(self) -> None:
        """One LIST of an empty folder, as a worker starts: raises :class:`StoreRefused` when
        the store refuses it for good (a bucket that does not exist — a typo in XSKY_STORE —,
        a wrong region, credentials it does not take), :class:`StoreUnavailable` when it does
        not answer. Without it, a misspelt bucket was found by the first agent's first write,
        which waits for it ("its bucket is missing") as for a store wiped or restarting."""
        self._listed("_check/")

    def refusal(self, e: StoreRefused) -> str:
        """What the store answered a refused request, and how to mend it, for a person."""
        said = e.strerror or ""
        status = re.search(r"status code: (\d{3})", said)
        code = re.search(r"<Code>([^<]+)</Code>", said)
        answer = " ".join(filter(None, [status[1] if status else None, code[1] if code else None]))
        bucket = self.location.bucket
        if status and status[1] == "404":
            mend = f"does the bucket {bucket} exist? make it first (e.g. `aws s3 mb s3://{bucket}`) or fix XSKY_STORE"
        elif status and status[1] in ("401", "403"):
            mend = (
                f"the credentials are refused or may not list {self.where}: check "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_SESSION_TOKEN, AWS_PROFILE) and "
                "that they may s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject under "
                "the prefix"
            )
        else:
            mend = "check XSKY_STORE's bucket, AWS_REGION and AWS_ENDPOINT_URL"
        return (f"it answers {answer}" if answer else said[:200]) + f"\n  {mend}"

    def put(self, key: str, data: bytes, *, sync: bool = False) -> None:
        with _answering(self.where, writing=True):
            obstore.put(self._store, key, data)  # acknowledged = durable

    def put_new(self, key: str, data: bytes) -> bool:
        # A conditional PUT (If-None-Match: *): the store itself lets one writer win.
        try:
            with _answering(self.where, writing=True):
                obstore.put(self._store, key, data, mode="create")
        except AlreadyExistsError:
            return False
        except PreconditionError:  # how some S3-compatible stores word the same refusal
            return False
        return True

    def get(self, key: str) -> bytes:
        with _answering(self.where):
            return bytes(obstore.get(self._store, key).bytes())

    def get_tagged(self, key: str) -> tuple[bytes, str]:
        with _answering(self.where):
            got = obstore.get(self._store, key)
            return bytes(got.bytes()), str(got.meta["e_tag"] or "")

    def put_if(self, key: str, data: bytes, tag: str | None, *, sync: bool = False) -> str | None:
        mode: Any = (
            "create" if tag is None else "overwrite" if tag == ANY_VERSION else {"e_tag": tag}
        )
        try:
            # (not _answering's writing=True: a conditional PUT on a missing key is "not found"
            # — the object went, e.g. a gc — which is the condition failing, not a missing bucket)
            with _answering(self.where):
                done = obstore.put(self._store, key, data, mode=mode)
        except (AlreadyExistsError, PreconditionError, FileNotFoundError):
            return None
        return str(done["e_tag"] or "")

    def chunks(self, key: str) -> Iterator[bytes]:
        with _answering(self.where):
            for piece in obstore.get(self._store, key).stream(min_chunk_size=CHUNK):
                yield bytes(piece)

    def exists(self, key: str) -> bool:
        try:
            with _answering(self.where):
                obstore.head(self._store, key)
        except FileNotFoundError:
            return False
        return True

    def _listed(self, prefix: str) -> list[str]:
        # object_store lists by path segments: list the folder, keep the names that match.
        folder = prefix.rpartition("/")[0]
        found: list[str] = []
        with _answering(self.where):
            for batch in obstore.list(self._store, folder or None, chunk_size=1000):
                found += [m["path"] for m in batch if m["path"].startswith(prefix)]
        return found

    def keys(self, prefix: str) -> list[str]:
        keys = set()
        for key in self._listed(prefix):
            whole, parts, _ = key.partition(PARTS)
            keys.add(whole if parts else key)
        return sorted(keys)

    def delete(self, key: str) -> None:
        doomed = [key, *self._listed(key + PARTS)]
        with _answering(self.where):
            obstore.delete(self._store, doomed)

    def append(self, key: str, data: bytes, *, sync: bool = False) -> None:
        piece = f"{key}{PARTS}{time.time_ns():020d}-{random.token_hex(4)}"
        with _answering(self.where, writing=True):
            obstore.put(self._store, piece, data)

    def appended(self, key: str) -> bytes:
        pieces = sorted(self._listed(key + PARTS))
        return b"".join(self._got(p) for p in pieces)

    def _got(self, key: str) -> bytes:
        try:
            return self.get(key)
        except FileNotFoundError:  # removed meanwhile (gc)
            return b""
