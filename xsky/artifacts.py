"""Naming of artifacts: where a run's blobs live and how a reference travels in text.

Large results never enter workflow history. The workflow renders ``{{agent_2_result}}``
for a large result as a marker ``⟦artifact:<uri>⟧``; the activity that receives the
rendered text swaps each marker for the stored text (activities/artifacts.py). Layout
under the artifact root: ``<run>/<agent>/<file>``.
"""

from __future__ import annotations

import hashlib
import re

from xsky.wire import WireModel


class ArtifactRef(WireModel):
    """A stored blob (large result, screenshot): where it is, how big, what it starts with."""

    uri: str  # "artifact:<run>/<agent>/<file>", relative to the artifact root
    size: int
    sha256: str
    preview: str = ""
    media_type: str = "text/plain"


URI_PREFIX = "artifact:"
# ``⟦artifact:<path>⟧`` stands for the stored text; ``⟦artifact:<path>#head=N⟧`` for its
# first N characters and a note of how much more there is (context handed along `depends`).
MARKER_RE = re.compile(r"⟦artifact:([A-Za-z0-9_.\-/]+)(?:#head=(\d{1,7}))?⟧")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# The end safe_component gives a name it had to change: "-" and 10 hex of the name's hash.
CHANGED_END = re.compile(r"-[0-9a-f]{10}$")
_EDGE_DOTS = re.compile(r"^\.+|\.+$")


def looks_changed(name: str, limit: int = 120) -> bool:
    """Whether ``name`` is shaped as safe_component's output for another name: its end, and a
    "_" where a character was replaced or the full length of a name cut short. (An id such as
    ``build-1a2b3c4d5e`` has no such shape: it stays its own folder.)"""
    return bool(CHANGED_END.search(name)) and ("_" in name[:-11] or len(name) >= limit)


def _name_digest(name: str) -> str:
    """What a changed name ends with after its "-": 10 hex of the name's hash."""
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def safe_component(name: str, limit: int = 120) -> str:
    """A path component that cannot climb out of its directory or clash with the layout."""
    # (dots that start or end it become "_": so every name changed here holds a "_", or is
    # cut to the limit — what tells a changed name from one given as it is, below)
    cleaned = _EDGE_DOTS.sub(lambda m: "_" * len(m.group()), _UNSAFE.sub("_", name)) or "_"
    if cleaned == name and len(name) <= limit and not looks_changed(name, limit):
        return name
    # Cleaning or cutting made it lossy: "a/b" and "a_b" must not share a folder. A name that
    # looks as a changed one does is changed too: else the id "x_1-<hash of 'x:1'>", chosen by
    # whoever starts a run, would name the folder of run "x:1" (its workspace, its files).
    return f"{cleaned[: max(1, limit - 11)]}-{_name_digest(name)}"


def run_folder(run_id: str) -> str:
    """The run's folder in the store (and under the worker's ``runs/``).

    The store's own folders begin with "_" (``_pages/``: every run's browser logins,
    ``_workspaces/``: named workspaces' snapshots). The CLI refuses such run ids, but any
    Temporal client can start a run: a run ``_pages`` whose agent was named after another run
    wrote that run's page file. Such an id is changed as safe_component changes a lossy name —
    ``run`` before it, its hash after — so its folder is neither a folder of the store's own
    (nor passed over by ``gc``, which lists none of those) nor any other id's folder: an id
    spelled as the changed name looks changed and is changed itself."""
    folder = safe_component(run_id)
    if not folder.startswith("_"):
        return folder
    return f"run{folder[: 120 - 14]}-{_name_digest(run_id)}"


def artifact_path(run_id: str, agent_id: str, filename: str) -> str:
    """Relative path of an artifact in the store, laid out per run and agent."""
    return "/".join((run_folder(run_id), safe_component(agent_id), safe_component(filename)))


# The page a browser agent left (its cookies, its origin's storage, its address), for the agent
# after it (activities/tools/browsing.py): outside the run's folder, which every command of the
# run may read (a sandbox mounts it), since its cookies are a login. gc removes it with the run.
PAGES = "_pages/"


def pages_folder(run_id: str) -> str:
    return f"{PAGES}{run_folder(run_id)}/"


def page_key(run_id: str, agent_id: str) -> str:
    return f"{pages_folder(run_id)}{safe_component(agent_id)}.json"


def item_pages(run_id: str, agent_id: str) -> str:
    """What the page keys of ``agent_id``'s loop or watch items (``agent_id[N]``) begin with:
    safe_component changes such a name, and the changed name begins with the cleaned one."""
    cleaned = _EDGE_DOTS.sub(lambda m: "_" * len(m.group()), _UNSAFE.sub("_", f"{agent_id}["))
    return f"{pages_folder(run_id)}{cleaned[: 120 - 11]}"


# What `starter.py gc` leaves of a run whose stored objects it removed: when, and how many,
# so a later read says they were removed rather than blaming the reader's configuration.
GC_MARK = "_gc.json"


def gc_mark_key(run_id: str) -> str:
    return f"{run_folder(run_id)}/{GC_MARK}"


def marker(ref: ArtifactRef, head: int | None = None) -> str:
    return f"⟦{ref.uri}⟧" if head is None else f"⟦{ref.uri}#head={head}⟧"


def is_marker(value: str) -> bool:
    """Is the whole value one artifact marker (a stored result the activity expands)?"""
    return MARKER_RE.fullmatch(value) is not None


def uri_path(uri: str) -> str:
    if not uri.startswith(URI_PREFIX):
        raise ValueError(f"not an artifact uri: {uri!r}")
    path = uri[len(URI_PREFIX) :]
    if path.startswith("/") or any(part in ("", ".", "..") for part in path.split("/")):
        raise ValueError(f"artifact uri {uri!r} does not name a file inside the store")
    return path


# -- text larger than a payload ------------------------------------------------------------------

# One part of a blob: at most this many characters (under 1 MiB as UTF-8 JSON, whatever the text).
PART_CHARS = 200_000
# Where the worker has External Storage: parts over its 256 KiB threshold, so the history holds
# a claim for each instead of its text (and a blob takes fewer activities).
STORED_PART_CHARS = 1_000_000
BLOB_AGENT = "_leader"  # the blobs' folder inside a run's artifacts


class BlobRef(WireModel):
    """Text too large for one Temporal payload (a big plan, a run's state or results), kept
    in the artifact store in parts ``<run>/_leader/<name>.<i>``; workflows read and write
    it one part per activity, so no payload grows with the plan."""

    run_id: str
    name: str
    parts: int
    size: int  # characters
    sha256: str  # of the whole text, UTF-8

    def part_uri(self, index: int) -> str:
        return URI_PREFIX + artifact_path(self.run_id, BLOB_AGENT, f"{self.name}.{index}")


class BlobPart(WireModel):
    """Input of ``leader_put``: one part to write."""

    ref: BlobRef
    index: int
    text: str


class BlobPartRequest(WireModel):
    """Input of ``leader_get``: one part to read."""

    ref: BlobRef
    index: int


class BlobDrop(WireModel):
    """Input of ``leader_drop``: remove the run's blobs named ``prefix``…, but ``keep``."""

    run_id: str
    prefix: str
    keep: str


def split_text(text: str, part_chars: int = PART_CHARS) -> list[str]:
    return [text[i : i + part_chars] for i in range(0, len(text), part_chars)] or [""]


def blob_ref(run_id: str, name: str, text: str, part_chars: int = PART_CHARS) -> BlobRef:
    """The reference ``text`` gets when stored as ``name`` of the run in parts of
    ``part_chars`` (pure: no I/O)."""
    return BlobRef(
        run_id=run_id,
        name=name,
        parts=len(split_text(text, part_chars)),
        size=len(text),
        sha256=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
    )
