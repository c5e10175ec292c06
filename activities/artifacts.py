"""The artifact store: a directory holding results and files too large for history.

Writes are atomic (temp file + rename) and idempotent: a retried activity rewrites the
same path with the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Collection
from pathlib import Path

from activities.fsio import atomic_write
from xsky.artifacts import (
    BLOB_AGENT,
    MARKER_RE,
    URI_PREFIX,
    ArtifactRef,
    BlobPart,
    BlobRef,
    artifact_path,
    split_text,
    uri_path,
)

PREVIEW_CHARS = 240


class ArtifactStore:
    def __init__(self, root: str | Path, share_gid: int | None = None):
        self.root = Path(root).resolve()
        # The sandbox user's group, when it is not the worker's (a root worker): a run's
        # sandboxes may read that run's artifacts (bound read-only), nobody else may.
        self.share_gid = share_gid

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
        target = self.root / rel
        share = None if self.share_gid is None else lambda fd: self._share(target.parent, fd)
        atomic_write(target, data, sync=False, before=share)
        return ArtifactRef(
            uri=URI_PREFIX + rel,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            preview=preview,
            media_type=media_type,
        )

    def _share(self, folder: Path, fd: int) -> None:
        """Group-readable by the sandbox's group: the file, its agent folder, its run folder."""
        assert self.share_gid is not None
        os.fchown(fd, -1, self.share_gid)
        os.fchmod(fd, 0o640)
        for place in (folder, folder.parent):
            if place == self.root or not place.is_relative_to(self.root):
                break
            info = place.stat()
            if info.st_gid != self.share_gid or info.st_mode & 0o050 != 0o050:
                os.chown(place, -1, self.share_gid)
                os.chmod(place, (info.st_mode & 0o7777) | 0o050)

    def put_text(self, run_id: str, agent_id: str, filename: str, text: str) -> ArtifactRef:
        preview = text[:PREVIEW_CHARS]
        return self.put_bytes(
            run_id, agent_id, filename, text.encode("utf-8"), "text/plain; charset=utf-8", preview
        )

    def put_part(self, part: BlobPart) -> None:
        """One part of a blob (idempotent: a retry writes the same bytes to the same path)."""
        self.put_text(part.ref.run_id, BLOB_AGENT, f"{part.ref.name}.{part.index}", part.text)

    def path(self, ref_or_uri: ArtifactRef | str) -> Path:
        uri = ref_or_uri.uri if isinstance(ref_or_uri, ArtifactRef) else ref_or_uri
        return self.root / uri_path(uri)

    def read_text(self, ref_or_uri: ArtifactRef | str) -> str:
        try:
            return self.path(ref_or_uri).read_text(encoding="utf-8")
        except FileNotFoundError:
            uri = ref_or_uri.uri if isinstance(ref_or_uri, ArtifactRef) else ref_or_uri
            raise FileNotFoundError(
                f"artifact {uri} is not in the store at {self.root}; is XSKY_ARTIFACTS the same for this process and the workers?"
            ) from None

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


def read_blob(store: ArtifactStore, ref: BlobRef) -> str:
    """The whole text of a blob, checked against its digest."""
    text = "".join(store.read_text(ref.part_uri(i)) for i in range(ref.parts))
    if hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != ref.sha256:
        raise ValueError(
            f"blob {ref.name} of run {ref.run_id} does not match its digest: the store was changed or is incomplete"
        )
    return text
