"""Which destinations an egress endpoint lets through: names first, then every address.

Names: deny patterns, then allow patterns (``host``, ``*.suffix``; ``None`` allows any host)
and, for sandboxed commands, web ports only unless a rule names the host. Addresses —
every address a name resolves to, whatever a rule says about the name:

- link-local and cloud metadata addresses: never (:func:`xsky.security.addresses.never_reachable`);
- the Temporal server's endpoints (:mod:`.temporal_ports`): never;
- loopback, private, carrier-grade NAT, reserved, documentation ranges and this machine's
  own addresses: only for an exact ``host:port`` rule naming that host and port.

A policy is plain data (it travels to the proxy process as JSON).
"""

from __future__ import annotations

import fnmatch
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from activities.sandbox import temporal_ports
from xsky.security.addresses import blocked_address, ip_of, never_reachable
from xsky.security.allow_hosts import how_to_open

# Commands reach hosts a wildcard allows on these only (no SMTP, SSH, databases …).
WEB_PORTS = frozenset({80, 443})


def normal_host(host: str) -> str:
    """How rules and requests compare hosts: lower case, no trailing dot or brackets, and an
    address in its one canonical spelling (``2130706433`` is ``127.0.0.1``)."""
    name = host.strip().strip("[]").rstrip(".").lower()
    literal = ip_of(name)
    return str(literal) if literal is not None else name


def split_rule(pattern: str) -> tuple[str, int | None]:
    """``127.0.0.1:8080`` → ``("127.0.0.1", 8080)``; ``[::1]:3000`` → ``("::1", 3000)``;
    ``pypi.org`` → ``("pypi.org", None)``. A pattern ending in ``:digits`` names a port."""
    text = pattern.strip()
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and 0 < int(port) < 65536 and (":" not in host or host.endswith("]")):
        return normal_host(host), int(port)
    return normal_host(text) if "*" not in text else text.lower().rstrip("."), None


def _domain_match(host: str, pattern: str) -> bool:
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern or host.endswith("." + pattern) or fnmatch.fnmatchcase(host, pattern)


@dataclass
class Policy:
    """Which destinations an egress endpoint lets through."""

    allow: list[str] | None = None  # host patterns; None: any host (the browser, http_get)
    deny: list[str] = field(default_factory=list)  # host patterns, or host:port
    exact: set[tuple[str, int]] = field(default_factory=set)  # (host, port): may be private
    # (ip, port) never, beside Temporal
    forbidden: set[tuple[str, int]] = field(default_factory=set)
    ports: frozenset[int] | None = None  # the only ports of hosts no rule names; None: any
    settings_file: str = ""  # the worker's settings file, which refusals tell how to change

    @classmethod
    def from_rules(
        cls,
        allowed: list[str],
        denied: list[str],
        *,
        any_host: bool,
        ports: frozenset[int] | None,
        settings_file: str = "",
    ) -> Policy:
        """A policy from ``domain:`` rule patterns ("host", "*.suffix", "host:port")."""
        names = [h for h, p in map(split_rule, allowed) if p is None]
        exact = {(h, p) for h, p in map(split_rule, allowed) if p is not None}
        return cls(
            allow=None if any_host else names,
            deny=[p.strip().lower() for p in denied],
            exact=exact,
            ports=ports,
            settings_file=settings_file,
        )

    def wire(self) -> dict[str, Any]:
        return {
            "allow": self.allow,
            "deny": self.deny,
            "exact": sorted(self.exact),
            "forbidden": sorted(self.forbidden),
            "ports": None if self.ports is None else sorted(self.ports),
            "settingsFile": self.settings_file,
        }

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Policy:
        return cls(
            allow=data["allow"],
            deny=list(data["deny"]),
            exact={(str(h), int(p)) for h, p in data["exact"]},
            forbidden={(str(h), int(p)) for h, p in data["forbidden"]},
            ports=None if data["ports"] is None else frozenset(data["ports"]),
            settings_file=str(data.get("settingsFile", "")),
        )

    def _denied(self, host: str, port: int | None) -> bool:
        for pattern in self.deny:
            name, pinned = split_rule(pattern)
            if (pinned is None or pinned == port) and _domain_match(host, name):
                return True
        return False

    def _denied_address(
        self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int
    ) -> str | None:
        """The address a deny rule names that ``addr`` is (IPv4 also as ::ffff:a.b.c.d)."""
        mapped = getattr(addr, "ipv4_mapped", None) or addr
        for pattern in self.deny:
            name, pinned = split_rule(pattern)
            try:
                named = ipaddress.ip_address(name.strip("[]"))
            except ValueError:
                continue
            named = getattr(named, "ipv4_mapped", None) or named
            if (pinned is None or pinned == port) and named == mapped:
                return name
        return None

    def check_name(self, host: str, port: int | None = None) -> str | None:
        """Why a host (and port) is refused before any lookup (None: go on to its addresses)."""
        host = normal_host(host)
        pinned = port is not None and (host, port) in self.exact
        if self._denied(host, port):
            return f"{host} is denied by a domain rule"
        if (
            self.ports is not None
            and port is not None
            and port not in self.ports
            and not pinned
            and host not in (self.allow or [])
        ):
            return (
                f"port {port} of {host} is not a web port ({', '.join(map(str, sorted(self.ports)))}); "
                f"{how_to_open(host, port, self.settings_file)}"
            )
        if (
            self.allow is not None
            and not pinned
            and not any(_domain_match(host, p) for p in self.allow)
        ):
            return (
                f"{host} is not among the domains the settings allow ({', '.join(self.allow) or 'none'}); "
                f"{how_to_open(host, None, self.settings_file)}"
            )
        return None

    def check_address(
        self, host: str, ip: str, port: int, temporal: temporal_ports.Endpoints | None = None
    ) -> str | None:
        """Why ``host``, resolved to ``ip``, may not be reached on ``port`` (None: it may)."""
        addr = ipaddress.ip_address(ip.split("%")[0])
        where = f"{ip}:{port}" if normal_host(host) == str(addr) else f"{host} ({ip}:{port})"
        never = never_reachable(addr)
        if never:
            return f"{where}: {never}; no rule can allow it"
        denied = self._denied_address(addr, port)
        if denied is not None:
            # a rule that denies an address denies every name that leads there
            return f"{where} is denied by the rule for {denied}"
        temporal = temporal if temporal is not None else temporal_ports.default().current()
        if (str(addr), port) in self.forbidden or temporal.include(str(addr), port, host):
            return f"{where} is the Temporal server; agents never talk to it, whatever the rules"
        reason = blocked_address(addr)
        if reason is None and temporal_ports.is_local(str(addr)):
            reason = f"{addr} is an address of this machine (its services may listen there)"
        name = normal_host(host)
        mapped = getattr(addr, "ipv4_mapped", None) or addr  # ::ffff:127.0.0.1 is loopback too
        # this machine: loopback, the unspecified address (a connect to 0.0.0.0 lands on it),
        # and its own interfaces' addresses
        here = mapped.is_loopback or mapped.is_unspecified or temporal_ports.is_local(str(mapped))
        if reason and here and not _names_no_dns(name):
            # A rule naming a host opens what that name resolves to — but a name that resolves
            # to this machine's loopback may have been made to (DNS rebinding by whoever owns
            # it): loopback opens only to a rule that names it.
            return (
                f"{where}: {reason}, reached through the name {name}; a rule for a name does not "
                f"open this machine's loopback: name 127.0.0.1:{port} or localhost:{port} itself"
            )
        if reason and (name, port) not in self.exact:
            return f"{where}: {reason}; {how_to_open(normal_host(host), port, self.settings_file)}"
        return None


def _names_no_dns(host: str) -> bool:
    """``localhost`` (or a name under it), or an address written as one: what a rule names
    then is this machine itself, not what someone's DNS says a name is."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
