"""Tools from MCP servers: the servers a worker may start, their sessions, discoveries and calls.

``servers`` reads which servers the worker's settings configure and resolves their ``${VAR}``
references (here, inside activities, never in a run's input); ``launch`` opens a session —
a stdio server inside the OS sandbox, an HTTP server through the egress proxy; ``pool`` keeps
sessions per worker, restarts a server that died once, and closes them at shutdown;
``discovery`` records what each server offers, once per run; ``results`` turns a tool's answer
into text and artifacts; ``toolset`` is what one agent attempt sees and calls.
"""
