"""Hosts the person starting a run opens for it (``starter.py run --allow-host HOST[:PORT]``,
``RunOptions.allow_hosts``), and how a refusal says to open one.

Each host becomes one allow rule, ``network(domain:HOST)`` or ``network(domain:HOST:PORT)``,
which counts for the browser, ``http_get`` and sandboxed commands alike. A local, private
or reserved host is opened one port at a time: ``127.0.0.1`` alone is refused, with the fix
(``127.0.0.1:8080``), so naming loopback never opens every service of the machine. A rule
without a port means what it means in a settings file: the host and its subdomains on web
ports, public addresses only — it never opens a loopback or private address.

These rules come from the run's options, which only the starter writes: a plan's XML (an
LLM may have written it) and a replan change the plan, never the options. Link-local and
metadata hosts are refused here as everywhere (no rule opens them), and the worker's deny
rules still win.
"""

from __future__ import annotations

from xsky.security.addresses import LOCAL_NAMES, blocked_host, ip_of, never_reachable
from xsky.security.rules import domain

FLAG = "--allow-host"
WORKER_SETTINGS = "~/.xsky/settings.json (or the file $XSKY_USER_SETTINGS names)"


def host_rule(text: str) -> str:
    """The allow rule ``--allow-host text`` adds; ValueError (saying how to write it) when
    ``text`` is not ``HOST``, ``HOST:PORT`` or ``[IPv6]:PORT``, names a pattern, a
    link-local or metadata host, or a local or private host without its port."""
    spec = text.strip()
    how = (
        f"{spec!r} is not a host: write HOST or HOST:PORT, e.g. 127.0.0.1:8080, [::1]:3000 "
        "or docs.python.org (one exact host, no scheme, path or wildcard)"
    )
    if not spec or "/" in spec or "*" in spec or "?" in spec or spec.startswith("domain:"):
        raise ValueError(how)
    try:
        host, port = domain(f"domain:{spec}")
    except ValueError as e:
        detail = str(e).replace("domain:", "").split(": ", 1)[-1]
        raise ValueError(f"{how}; {detail}") from None
    addr = ip_of(host)
    never = never_reachable(addr) if addr is not None else None
    if never or (
        addr is None and LOCAL_NAMES.match(host) and not host.rstrip(".").endswith("localhost")
    ):
        raise ValueError(f"{spec}: {never or 'a metadata service'}; no rule can open it")
    shown = f"[{host}]" if ":" in host else host
    local = blocked_host(host)
    if port is None and local:
        raise ValueError(
            f"{spec}: {local}; name the port, e.g. {shown}:8080 (a local host is opened one "
            "port at a time, so naming it does not open every service there)"
        )
    return f"network(domain:{shown}{'' if port is None else f':{port}'})"


def host_rules(texts: list[str]) -> list[str]:
    """The rules of every well-formed host (what a worker keeps of a run's ``allow_hosts``)."""
    rules = []
    for text in texts:
        try:
            rules.append(host_rule(text))
        except ValueError:
            continue
    return list(dict.fromkeys(rules))


def how_to_open(host: str, port: int | str | None, settings_file: str = "") -> str:
    """The fix a refusal of ``host`` (on ``port``: a number, ``"PORT"`` when the refused call
    did not say, None for the host on any web port) gives: the flag for one run, and the rule
    and the settings file the worker reads for every run."""
    name = host.strip().strip("[]").rstrip(".").lower()
    shown = f"[{name}]" if ":" in name else name
    target = shown if port is None else f"{shown}:{port}"
    return (
        f"to allow it for one run, start the run with {FLAG} {target} "
        f"(RunOptions(allow_hosts=[{target!r}]) in Python); for every run, add "
        f'"network(domain:{target})" to "permissions": {{"allow": [...]}} in the worker\'s '
        f"settings, {settings_file or WORKER_SETTINGS}"
    )
