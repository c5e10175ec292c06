"""The artifact store: results and files too large for history, in the store the settings
name (a local directory, or an object store every machine shares: activities/storage/).

Writes are atomic and idempotent: a retried activity rewrites the same key with the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from pathlib import Path

from activities.storage import open_objects
from activities.storage.local import LocalStore
from xsky.artifacts import (
    BLOB_AGENT,
    GC_MARK,
    MARKER_RE,
    URI_PREFIX,
    ArtifactRef,
    BlobPart,
    BlobRef,
    artifact_path,
    gc_mark_key,
    split_text,
    uri_path,
)
from xsky.config import Settings
from xsky.storage import ObjectStore

PREVIEW_CHARS = 240


class ArtifactStore:
    """Results, blobs and files of runs, in the store the settings name (xsky/storage.py): a
    local directory (a path, the default) or an object store shared by every machine."""

    def __init__(self, root: str | Path | ObjectStore, share_gid: int | None = None):
        self.objects: ObjectStore = (
            root if isinstance(root, ObjectStore) else LocalStore(root, share_gid)
        )

    @property
    def where(self) -> str:
        return self.objects.where

    def put_bytes(
        self,
        run_id: str,
        agent_id: str,
        filename: str,
        data: bytes,
        media_type: str,
        preview: str = "",
    ) -> ArtifactRef:
        rel = artifact_path(run_id, agent_id, filename)
        self.objects.put(rel, data)
        return ArtifactRef(
            uri=URI_PREFIX + rel,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            preview=preview,
            media_type=media_type,
        )

    def put_text(self, run_id: str, agent_id: str, filename: str, text: str) -> ArtifactRef:
        preview = text[:PREVIEW_CHARS]
        return self.put_bytes(
            run_id, agent_id, filename, text.encode("utf-8"), "text/plain; charset=utf-8", preview
        )

    def put_part(self, part: BlobPart) -> None:
        """One part of a blob (idempotent: a retry writes the same bytes to the same path)."""
        self.put_text(part.ref.run_id, BLOB_AGENT, f"{part.ref.name}.{part.index}", part.text)

    def read_bytes(self, ref_or_uri: ArtifactRef | str) -> bytes:
        uri = ref_or_uri.uri if isinstance(ref_or_uri, ArtifactRef) else ref_or_uri
        try:
            return self.objects.get(uri_path(uri))
        except FileNotFoundError:
            gone = removed_by_gc(self.objects, uri_path(uri).split("/", 1)[0], folder=True)
            if gone is not None:
                raise RemovedByGc(
                    f"artifact {uri} is no more: its run's stored objects were {gone}", gone
                ) from None
            hint = (
                "is XSKY_STORE the same for this process and the workers?"
                if self.objects.shared
                else "is XSKY_ARTIFACTS the same for this process and the workers (workers on "
                "other machines need XSKY_STORE=s3://…)?"
            )
            raise FileNotFoundError(f"artifact {uri} is not in {self.where}; {hint}") from None

    def read_text(self, ref_or_uri: ArtifactRef | str) -> str:
        return self.read_bytes(ref_or_uri).decode("utf-8")

    def expand_markers(self, text: str, issued: Collection[str] | None = None) -> str:
        """Swap ``⟦artifact:…⟧`` markers for the stored text they stand for.

        Only markers the leader issued for this agent (``issued``) are expanded; any other
        marker-shaped text — written into a plan, or inside a result — stays literal, so a
        plan cannot read another run's artifacts.
        """
        if "⟦artifact:" not in text:
            return text
        allowed = None if issued is None else set(issued)

        def expand(m: re.Match[str]) -> str:
            uri = URI_PREFIX + m.group(1)
            if allowed is not None and uri not in allowed:
                return m.group(0)
            stored = self.read_text(uri)
            head = int(m.group(2)) if m.group(2) else None
            if head is None or len(stored) <= head:
                return stored
            return f"{stored[:head]}\n… ({len(stored) - head} more characters in {uri})"

        return MARKER_RE.sub(expand, text)


def put_blob(store: ArtifactStore, ref: BlobRef, text: str) -> None:
    """Write every part of ``text`` (for processes with the store at hand, such as the CLI)."""
    for index, part in enumerate(split_text(text)):
        store.put_part(BlobPart(ref=ref, index=index, text=part))


class RemovedByGc(FileNotFoundError):
    """A stored object `starter.py gc` removed with its run's: ``gone`` says when and how many."""

    def __init__(self, message: str, gone: str) -> None:
        super().__init__(message)
        self.gone = gone


def removed_by_gc(objects: ObjectStore, run_id: str, folder: bool = False) -> str | None:
    """ "removed by `starter.py gc` on 2026-12-06 20:31 (42 objects)" when gc removed the run's
    stored objects (the mark it leaves: xsky.artifacts.GC_MARK), else None. ``folder``:
    ``run_id`` is the run's folder, as an artifact's URI names it (a run id the store had to
    change — ``plan:1``, one beginning with "_" — is not its folder: review14)."""
    key = f"{run_id}/{GC_MARK}" if folder else gc_mark_key(run_id)
    try:
        said = json.loads(objects.get(key))
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(said, dict):
        return None
    when = str(said.get("removedAt", "")).replace("T", " ")[:16]
    if said.get("unfinished"):  # (a gc stopped before it ended: client/gc.py)
        return (
            f"being removed by a `starter.py gc` begun on {when} that has not finished (some "
            f"of {said.get('objects', '?')} objects are gone; run `starter.py gc --run "
            f"{run_id}` again to finish it)"
        )
    return f"removed by `starter.py gc` on {when} ({said.get('objects', '?')} objects)"


def read_blob(store: ArtifactStore, ref: BlobRef) -> str:
    """The whole text of a blob, checked against its digest."""
    text = "".join(store.read_text(ref.part_uri(i)) for i in range(ref.parts))
    if hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != ref.sha256:
        raise ValueError(
            f"blob {ref.name} of run {ref.run_id} does not match its digest: the store was changed or is incomplete"
        )
    return text


def open_store(settings: Settings, share_gid: int | None = None) -> ArtifactStore:
    """The artifact store this process's settings name (``XSKY_STORE``, else ``XSKY_ARTIFACTS``)."""
    return ArtifactStore(open_objects(settings, share_gid))
