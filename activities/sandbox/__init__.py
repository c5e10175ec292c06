"""Where an agent's tool calls are decided and confined.

Decided (the policy people see and approve): :mod:`.gate` records every decision and asks
:mod:`.checker`, which runs :func:`xsky.security.permissions.decide` with a time budget.

Enforced (whatever the checker said): :mod:`.bwrap` builds the OS sandbox every process a
tool starts runs in, :mod:`.confine` keeps the worker's own file tools inside the
workspace, and :mod:`.egress` is the one way out to the network.
"""
