"""Every side effect of xsky: agents and their tools, artifacts, planning, LLM calls."""
