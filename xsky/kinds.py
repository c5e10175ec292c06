"""The agent kinds a worker can run without a role definition: the seed's tool agents."""

from xsky.wire import WireModel


class AgentInfo(WireModel):
    """An agent kind or role as planners see it: its name and what it is for."""

    name: str
    description: str = ""


TOOL_AGENT_KINDS: tuple[str, ...] = ("browser", "file", "llm", "shell")
