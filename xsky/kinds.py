"""The agent kinds a worker can run without a role definition: the seed's tool agents."""

TOOL_AGENT_KINDS: tuple[str, ...] = ("browser", "file", "llm", "shell")
