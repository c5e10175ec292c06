"""The agent kinds a worker can run without a role definition: the seed's tool agents."""

from xsky.wire import WireModel


class AgentInfo(WireModel):
    """An agent kind or role as planners see it: its name and what it is for."""

    name: str
    description: str = ""


TOOL_AGENT_KINDS: tuple[str, ...] = ("browser", "file", "llm", "shell")

# Agent kinds with their own task queue; every other name (llm and roles) goes to "llm".
QUEUE_KINDS: tuple[str, ...] = ("browser", "file", "shell")


def queue_kind(name: str) -> str:
    """The task queue's kind an agent of this name runs on: roles run as ``llm``."""
    return name if name in QUEUE_KINDS else "llm"
