"""A tool's answer as an agent reads it: text, structured content, and artifacts for the rest.

Text blocks are the text; structured content is kept whole in the details (and is the text
when the server gave no text); images, audio and binary resources are stored in the artifact
store (the text says where); resource links and embedded text resources are written out.
Large texts are stored like every result (the model loop caps what it reads and stores the
whole; a direct agent's result goes to the store past the run's threshold).

Everything here is scrubbed of the worker's secrets (:func:`activities.sandbox.secrets.scrub`):
a server may echo what it was given, and its answer reaches the model, the board and the
run's history. Stored text (a ``text/*`` or JSON blob) is scrubbed too; other binaries are not.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import mimetypes
from dataclasses import dataclass
from typing import Any

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from activities.sandbox import secrets
from activities.tools import ToolContext
from xsky.artifacts import safe_component


@dataclass
class Rendered:
    text: str
    error: bool = False
    structured: Any = None


# The most of a tool's answer that is read (its text, structured content and encoded data,
# as the server sent them): a server's reply is not trusted to be of a size a worker holds
# many of — every step below makes copies.
MAX_RESULT_CHARS = 32 * 1024 * 1024


class ResultTooLarge(ValueError):
    """A server's answer larger than :data:`MAX_RESULT_CHARS`."""


def result_size(result: CallToolResult) -> int:
    """Characters of ``result`` as sent: text, encoded data and structured content."""
    size = 0
    for block in result.content:
        for field in ("text", "data"):
            value = getattr(block, field, None)
            size += len(value) if isinstance(value, str) else 0
        resource = getattr(block, "resource", None)
        for field in ("text", "blob"):
            value = getattr(resource, field, None)
            size += len(value) if isinstance(value, str) else 0
    if result.structured_content is not None:
        size += len(json.dumps(result.structured_content, default=str))
    return size


def stores(result: CallToolResult) -> bool:
    """Does rendering ``result`` write to the store (an image, audio, an embedded blob)? Only
    then is it rendered off the event loop (activities/tools/store_writes.py)."""
    return any(
        isinstance(b, ImageContent | AudioContent)
        or (isinstance(b, EmbeddedResource) and isinstance(b.resource, BlobResourceContents))
        for b in result.content
    )


def tool_result(ctx: ToolContext, tool: str, result: CallToolResult) -> Rendered:
    size = result_size(result)
    if size > MAX_RESULT_CHARS:
        raise ResultTooLarge(
            f"its answer to {tool} is {size:,} characters, more than the {MAX_RESULT_CHARS:,} an "
            "answer may be: not kept (ask for less: a page, a range, a filter)"
        )
    structured = secrets.scrub_value(result.structured_content)
    out = Rendered("", error=result.is_error, structured=structured)
    parts = [_block(ctx, tool, n, block) for n, block in enumerate(result.content)]
    if structured is not None and not any(isinstance(b, TextContent) for b in result.content):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=1))
    out.text = secrets.scrub("\n".join(p for p in parts if p))
    return out


def resource_result(ctx: ToolContext, uri: str, result: ReadResourceResult) -> Rendered:
    parts = [_contents(ctx, f"resource-{n}", c) for n, c in enumerate(result.contents)]
    return Rendered(secrets.scrub("\n".join(p for p in parts if p)) or f"(resource {uri} is empty)")


def prompt_result(ctx: ToolContext, name: str, result: GetPromptResult) -> Rendered:
    lines = [result.description] if result.description else []
    for n, message in enumerate(result.messages):
        lines.append(f"[{message.role}] {_block(ctx, f'prompt-{name}', n, message.content)}")
    return Rendered(secrets.scrub("\n".join(lines)))


def _block(ctx: ToolContext, tool: str, n: int, block: Any) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return _stored(ctx, f"{tool}-{n}", kind, block.data, block.mime_type)
    if isinstance(block, ResourceLink):
        about = ", ".join(x for x in (block.mime_type, block.description) if x)
        return f"[resource link: {block.name} {block.uri}" + (f" ({about})" if about else "") + "]"
    if isinstance(block, EmbeddedResource):
        return _contents(ctx, f"{tool}-{n}", block.resource)
    return f"[{getattr(block, 'type', 'content')} not shown]"


def _contents(ctx: ToolContext, name: str, contents: Any) -> str:
    if isinstance(contents, TextResourceContents):
        return f"[resource {contents.uri}]\n{contents.text}"
    if isinstance(contents, BlobResourceContents):
        mime = contents.mime_type or "application/octet-stream"
        return _stored(ctx, name, f"resource {contents.uri}", contents.blob, mime)
    return ""


def _stored(ctx: ToolContext, name: str, kind: str, data: str, mime: str) -> str:
    """Base64 content into the artifact store; the line that says where it went."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} ({mime}) not stored: its data is not valid base64]"
    if mime.startswith("text/") or mime.endswith(("json", "xml")):
        with contextlib.suppress(UnicodeDecodeError):  # text in another encoding: kept as it is
            raw = secrets.scrub(raw.decode("utf-8")).encode()
    extension = mimetypes.guess_extension(mime) or ".bin"
    filename = f"{ctx.file_prefix}mcp-{safe_component(name, 80)}{extension}"
    ref = ctx.store.put_bytes(ctx.run_id, ctx.agent_id, filename, raw, mime, preview=kind)
    ctx.artifacts.append(ref)  # the attempt's artifacts, as a screenshot's are
    return f"[{kind}, {mime}, {len(raw):,} bytes, stored as {ref.uri}]"
