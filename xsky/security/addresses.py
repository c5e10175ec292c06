"""Which network addresses agents may not reach, however a command, a URL or a DNS answer
spells them.

Two tiers: :func:`never_reachable` (link-local and the clouds' metadata services, where a
machine's credentials live: no rule opens them) and :func:`blocked_address` (loopback,
private, carrier-grade NAT, reserved, documentation ranges: only an exact ``host:port``
rule opens them). IPv6 spellings that carry an IPv4 address — mapped, compatible, 6to4,
Teredo, NAT64 — are judged by the address they carry.

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


# Where clouds serve instance metadata and credentials (AWS, GCP, Azure, Oracle, DigitalOcean
# on 169.254.169.254; AWS's IPv6 endpoint; Alibaba; Azure's wire server), and link-local.
_NEVER = tuple(
    ipaddress.ip_network(n)
    for n in (
        "169.254.0.0/16",
        "100.100.100.200/32",
        "168.63.129.16/32",
        "fe80::/10",
        "fd00:ec2::254/128",
    )
)
# NAT64 prefixes: RFC 6052's well-known one carries the IPv4 in its last 32 bits; in RFC 8215's
# local-use /48 it sits in bits 48-63 and 72-87 (or, with a longer prefix, the last 32 bits).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def embedded_ipv4(addr: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address may stand for (a router or the kernel translates them)."""
    found = [addr.ipv4_mapped, addr.sixtofour, *(addr.teredo or ())]
    value = int(addr)
    if addr in _NAT64 or (value >> 32 == 0 and value > 1):  # NAT64, or IPv4-compatible ::a.b.c.d
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    if addr in _NAT64_LOCAL:
        found.append(ipaddress.IPv4Address(((value >> 64) & 0xFFFF) << 16 | (value >> 40) & 0xFFFF))
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    return [a for a in found if a is not None]


def never_reachable(addr: IPAddress) -> str | None:
    """Why no rule may open an address: link-local, or a cloud's metadata service (None: not one)."""
    if isinstance(addr, ipaddress.IPv6Address):
        for inner in embedded_ipv4(addr):
            reason = never_reachable(inner)
            if reason:
                return f"{reason} (inside {addr})"
    if any(addr.version == net.version and addr in net for net in _NEVER):
        return (
            f"{addr} is link-local or a cloud metadata address (a machine's credentials live there)"
        )
    return None


def blocked_address(addr: IPAddress) -> str | None:
    """Why an address is off limits for agents (None: a public address)."""
    never = never_reachable(addr)
    if never:
        return never
    if isinstance(addr, ipaddress.IPv6Address):
        for embedded in embedded_ipv4(addr):
            reason = blocked_address(embedded)
            if reason:
                return reason + f" (inside {addr})"
    if addr.is_loopback:
        return f"{addr} is a loopback address (this machine)"
    if addr.is_private or (
        isinstance(addr, ipaddress.IPv4Address) and addr in ipaddress.ip_network("100.64.0.0/10")
    ):
        return f"{addr} is a private network address"
    if isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local:
        return f"{addr} is a site-local address (a private network)"
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
