"""The agent kinds a worker can run without a role definition: the seed's tool agents."""

from xsky.models import WireModel


class AgentInfo(WireModel):
    """An agent kind or role as planners see it: its name and what it is for."""

    name: str
    description: str = ""


TOOL_AGENT_KINDS: tuple[str, ...] = ("browser", "file", "llm", "shell")

KIND_DESCRIPTIONS: dict[str, str] = {
    "browser": "opens web pages in Chromium: navigate, click, type, extract text and links, take screenshots; also plain HTTP GET",
    "file": "reads, writes and lists files in the run's workspace",
    "llm": "works with text: summarize, extract, compare, classify, write",
    "shell": "runs shell commands in the run's workspace (build, test, inspect)",
}
