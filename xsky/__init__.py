"""xsky's pure core: plan models, workflow XML, the DAG, variables, roles, permissions.

Nothing here does I/O at import time or imports Temporal workers, openai or Playwright,
so workflows can import it inside the sandbox.
"""
