"""A local OpenAI-compatible chat-completions server with scripted replies.

Real sockets, real HTTP: the product's `openai` client code path runs unchanged against
it. A test installs a ``responder(request, index) -> Reply`` and reads ``requests`` after.
Helpers script a conversation by *turn* (how many assistant messages the request already
holds), so a resumed conversation gets the reply for the turn it is at.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from xsky.leader.coordinator.prompts import ASKS
from xsky.leader.coordinator.prompts import SYSTEM as COORDINATOR_SYSTEM


@dataclass
class Reply:
    status: int = 200
    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: str = ""
    hold: threading.Event | None = None  # wait for this before answering (simulates a slow model)
    tokens: int = 15
    completion: int = 5  # of ``tokens``, the answer's; the rest are the prompt's


def text(content: str) -> Reply:
    return Reply(content=content)


def calls(*items: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(tool_calls=list(items))


def status(code: int, message: str) -> Reply:
    return Reply(status=code, error=message)


def is_coordinator(request: dict[str, Any]) -> bool:
    """A request of the leader's coordinator (activities/coordinator.py), not of an agent."""
    return system(request) == COORDINATOR_SYSTEM


def coordinator_point(request: dict[str, Any]) -> str:
    """Which point the coordinator is asked about: result, goal, question, approval, stall."""
    asked = first_user(request)
    return next(point for point, text in ASKS.items() if text in asked)


def judged(verdict: str, reason: str = "scripted", **fields: Any) -> Reply:
    """A coordinator's reply: ``{"verdict": …, "reason": …, **fields}`` as JSON."""
    return Reply(content=json.dumps({"verdict": verdict, "reason": reason, **fields}))


def default_coordinator(request: dict[str, Any], index: int) -> Reply:
    """The coordinator of tests that do not script one: it accepts results and finds the
    goal met, leaves questions and tool requests to the person, and has no view of a stall
    (an unreadable reply: the leader takes its ladder's own step)."""
    point = coordinator_point(request)
    if point == "result":
        return judged("accept", "it does its task")
    if point == "goal":
        return judged("met", "the results answer the request")
    if point in ("question", "approval"):
        return judged("leave", "a person should decide")
    return text("no opinion")


def turn_of(request: dict[str, Any]) -> int:
    return sum(1 for m in request["messages"] if m.get("role") == "assistant")


def last_tool_output(request: dict[str, Any]) -> str:
    tool = [m for m in request["messages"] if m.get("role") == "tool"]
    return tool[-1]["content"] if tool else ""


def first_user(request: dict[str, Any]) -> str:
    return next((m["content"] for m in request["messages"] if m.get("role") == "user"), "")


def system(request: dict[str, Any]) -> str:
    return next((m["content"] for m in request["messages"] if m.get("role") == "system"), "")


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.served: list[int] = []  # requests answered with a 200 (their usage was sent)
        self.lock = threading.Lock()
        self.responder: Callable[[dict[str, Any], int], Reply] = lambda req, i: text("ok")
        # The leader's coordinator asks with its own system prompt: its requests are kept and
        # answered apart from the agents' (a test of the coordinator scripts it).
        self.coordinator_requests: list[dict[str, Any]] = []
        self.coordinator: Callable[[dict[str, Any], int], Reply] = default_coordinator
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            # http.server's naming
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_auth"] = self.headers.get("Authorization", "")
                if is_coordinator(body):
                    with fake.lock:
                        index = len(fake.coordinator_requests)
                        fake.coordinator_requests.append(body)
                    reply = fake.coordinator(body, index)
                else:
                    with fake.lock:
                        index = len(fake.requests)
                        fake.requests.append(body)
                    reply = fake.responder(body, index)
                if reply.hold is not None:
                    reply.hold.wait(60)
                if reply.status != 200:
                    payload = {
                        "error": {
                            "message": reply.error,
                            "type": "test_error",
                            "code": str(reply.status),
                        }
                    }
                    self._send(reply.status, payload)
                    return
                message: dict[str, Any] = {"role": "assistant", "content": reply.content}
                if reply.tool_calls:
                    message["tool_calls"] = [
                        {
                            "id": f"call_{index}_{n}",
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                        for n, (name, args) in enumerate(reply.tool_calls)
                    ]
                # As real servers do: an answer is cut at max_tokens, and says so.
                prompt, completion = reply.tokens - reply.completion, reply.completion
                limit = body.get("max_tokens")
                cut = isinstance(limit, int) and completion > limit
                if cut:
                    completion = limit
                finish = "tool_calls" if reply.tool_calls else "stop"
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{index}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": "length" if cut else finish,
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        },
                    },
                )
                with fake.lock:
                    fake.served.append(index)

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (e.g. its worker was killed)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def for_task(self, needle: str) -> list[dict[str, Any]]:
        """Requests of the conversation whose first user message mentions ``needle``."""
        return [r for r in self.requests if needle in first_user(r)]
