"""Which network addresses agents may never reach, however a command or URL spells them.

Shared by the permission checker (which reads hosts out of commands and refuses, with a
reason for the log) and the egress proxy (which checks the addresses names resolve to).
"""

from __future__ import annotations

import ipaddress
import re
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Names that reach this machine or a cloud's metadata service without any lookup.
LOCAL_NAMES = re.compile(
    r"(?i)^(localhost|ip6-localhost|ip6-loopback|.*\.localhost|metadata|metadata\.google\.internal|"
    r"metadata\.azure\.internal|instance-data|instance-data\.ec2\.internal|metadata\.packet\.net)\.?$"
)
# Wildcard-DNS services that resolve a name made of an address to that address (169.254.169.254.nip.io).
_EMBEDDED = re.compile(
    r"(?i)^(?:.*?[.-])?(\d{1,3}[.-]\d{1,3}[.-]\d{1,3}[.-]\d{1,3}|[0-9a-f]{8})\.(?:nip\.io|sslip\.io|xip\.io|"
    r"traefik\.me|localtest\.me|lvh\.me)\.?$"
)


def ip_of(host: str) -> IPAddress | None:
    """The address a host names, in any spelling bash, curl or a browser would accept:
    dotted, decimal (``2852039166``), hex (``0xa9fea9fe``), octal, short forms, bracketed IPv6."""
    text = host.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))  # the legacy forms inet_aton accepts
    except (OSError, ValueError):
        return None


def blocked_address(addr: IPAddress) -> str | None:
    """Why an address is off limits for agents (None: a public address)."""
    if isinstance(addr, ipaddress.IPv6Address):
        for embedded in (addr.ipv4_mapped, addr.sixtofour, (addr.teredo or (None, None))[1]):
            if embedded is not None:
                reason = blocked_address(embedded)
                if reason:
                    return reason + f" (inside {addr})"
    if addr.is_loopback:
        return f"{addr} is a loopback address (this machine)"
    if addr.is_link_local:
        return f"{addr} is link-local (cloud metadata services live there)"
    if addr.is_private or (
        isinstance(addr, ipaddress.IPv4Address) and addr in ipaddress.ip_network("100.64.0.0/10")
    ):
        return f"{addr} is a private network address"
    if addr.is_multicast or addr.is_reserved or addr.is_unspecified:
        return f"{addr} is not a public unicast address"
    return None


def blocked_host(host: str) -> str | None:
    """Why a host, as written, is off limits without even resolving it (None: not known to be)."""
    name = host.strip().strip("[]").rstrip(".")
    if not name:
        return None
    addr = ip_of(name)
    if addr is not None:
        return blocked_address(addr)
    if LOCAL_NAMES.match(name):
        return f"{name} names this machine or a metadata service"
    m = _EMBEDDED.match(name)
    if m:
        digits = m.group(1)
        embedded = (
            ip_of(digits.replace("-", "."))
            if "." in digits or "-" in digits
            else ip_of(str(int(digits, 16)))
        )
        if embedded is not None and blocked_address(embedded):
            return f"{name} resolves to {embedded}: {blocked_address(embedded)}"
    return None
