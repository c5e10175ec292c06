"""Hosts: which a shell command names, and which the rules open or close to the browser and
the egress proxy.

:func:`destinations` reads the hosts out of a command (URLs, ``/dev/tcp`` paths, the operands
and host-naming options of network programs, each read with its own syntax); the shell rules
(:mod:`xsky.security.shell_rules`) refuse a command that names a local, private or metadata
host. :func:`domain_rules` gives the egress proxy the ``domain:`` patterns the rules allow and
deny, and :func:`denied_host` gives the browser and ``http_get`` a predicate over URLs. What
an address is (loopback, private, metadata …) is :mod:`xsky.security.addresses`' to say.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from xsky.security.addresses import ip_of
from xsky.security.rules import (
    PermissionSettings,
    domain,
    matches,
    rules_of,
    url_host,
    url_port,
)

# -- hosts a command names ----------------------------------------------------------------------

_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://(?:[^/\s@]*@)?(\[[^\]]+\]|[^/\s:?#]+)")
DEV_NET = re.compile(r"/dev/(?:tcp|udp)/([^/\s]+)")
_DEV_NET_PORT = re.compile(r"/dev/(?:tcp|udp)/([^/\s]+)/(\d{1,5})\b")
_HOSTISH = re.compile(r"[\w.\-:\[\]%]+")
_PIECE = re.compile(r"\[[^\]]*\]|[^:]+")


@dataclass(frozen=True)
class _Syntax:
    """How a network program's arguments read, from its man page: which options take a value
    (so the value is not taken for a host), and which of those values are, or hold, hosts."""

    values: frozenset[str] = frozenset()  # counts, timeouts, files, headers, names …
    hosts: frozenset[str] = frozenset()  # proxies, jump hosts, --resolve, bind addresses …
    cluster: bool = True  # getopt: -sSm10 is -s -S -m 10
    operands: Literal["all", "first", "remote"] = "all"  # which operands name hosts


def _opts(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CURL = _Syntax(
    values=_opts(
        "-A --user-agent -b --cookie -c --cookie-jar -C --continue-at -d --data --data-ascii "
        "--data-binary --data-raw --data-urlencode -D --dump-header -e --referer -E --cert "
        "--cert-type --key --key-type --pass --cacert --capath --ciphers --crlfile --pinnedpubkey "
        "-F --form --form-string -H --header --proxy-header -K --config --limit-rate -m --max-time "
        "--connect-timeout --expect100-timeout --keepalive-time --happy-eyeballs-timeout-ms "
        "--max-filesize --max-redirs -o --output --output-dir -r --range --retry --retry-delay "
        "--retry-max-time -T --upload-file -u --user -U --proxy-user -w --write-out -X --request "
        "-y --speed-time -Y --speed-limit -z --time-cond -Q --quote -t --telnet-option --trace "
        "--trace-ascii --stderr --unix-socket --abstract-unix-socket --oauth2-bearer --proto "
        "--proto-redir --json --variable --hsts --alt-svc --etag-save --etag-compare --aws-sigv4 "
        "--login-options --sasl-authzid --mail-from --mail-rcpt --mail-auth --netrc-file --engine "
        "--proxy-cacert --proxy-cert --proxy-key --proxy-pass --proxy-ciphers --service-name "
        "--proxy-service-name --krb --delegation --ftp-account --ftp-method --local-port "
        "--parallel-max --rate --create-file-mode --request-target --noproxy --tls-max "
        "--haproxy-clientip --hostpubmd5 --hostpubsha256 --pubkey --tlsuser --tlspassword"
    ),
    hosts=_opts(
        "-x --proxy --preproxy --socks4 --socks4a --socks5 --socks5-hostname --proxy1.0 "
        "--resolve --connect-to --interface --dns-servers --dns-interface --dns-ipv4-addr "
        "--dns-ipv6-addr --doh-url --url -P --ftp-port"
    ),
)
_WGET = _Syntax(
    values=_opts(
        "-O --output-document -o --output-file -a --append-output -i --input-file --config "
        "-P --directory-prefix -T --timeout --dns-timeout --connect-timeout --read-timeout "
        "-t --tries -w --wait --waitretry -Q --quota --limit-rate -U --user-agent --header "
        "--user --password --http-user --http-password --ftp-user --ftp-password --proxy-user "
        "--proxy-password --post-data --post-file --body-data --body-file --method --referer "
        "--load-cookies --save-cookies --ca-certificate --ca-directory --certificate "
        "--private-key --certificate-type --private-key-type --secure-protocol --ciphers "
        "--crl-file --pinnedpubkey -l --level -A --accept -R --reject --accept-regex "
        "--reject-regex -D --domains --exclude-domains -I --include-directories "
        "-X --exclude-directories --cut-dirs --restrict-file-names --default-page --progress "
        "--local-encoding --remote-encoding --hsts-file --warc-file --rejected-log "
        "--report-speed --retry-on-http-error --compression --backups --start-pos "
        "--max-redirect -n -B --base"
    ),
    hosts=_opts("-e --execute --bind-address --bind-dns-address --dns-servers"),
)
_PING = _Syntax(
    values=_opts("-c -i -W -w -s -t -l -p -Q -m -S -M -F -T"),
    hosts=_opts("-I"),
    operands="first",
)
_NC = _Syntax(  # OpenBSD and traditional netcat
    values=_opts("-w -p -i -q -I -O -T -V -X -M -m -P -e -c -K -R -Z"),
    hosts=_opts("-s -x -g -G"),
)
_NCAT = _Syntax(
    values=_opts(
        "-w --wait -p --source-port -i --idle-timeout -e --exec -c --sh-exec --lua-exec "
        "-o --output -x --hex-dump -d --delay -m --max-conns --allow --deny --allowfile "
        "--denyfile --ssl-cert --ssl-key --ssl-trustfile --ssl-ciphers --ssl-servername "
        "--ssl-alpn --proxy-type --proxy-auth --proxy-dns -C --crlf -q"
    ),
    hosts=_opts("-s --source --proxy -g -G"),
)
# ssh's -L/-R/-D/-W name addresses the far side resolves (or a local listener), not ours.
_SSH = _Syntax(
    values=_opts("-c -D -E -e -F -I -i -L -l -m -O -p -Q -R -S -w -W -B"),
    hosts=_opts("-b -J -o"),
    operands="first",  # what follows the destination is the remote command
)
_SCP = _Syntax(
    values=_opts("-c -F -i -l -P -S -D -X"),
    hosts=_opts("-J -o"),
    operands="remote",  # host:path; anything else is a local file
)
_SFTP = _Syntax(
    values=_opts("-B -b -c -D -F -i -l -P -R -S -s -X"),
    hosts=_opts("-J -o"),
    operands="first",
)
_RSYNC = _Syntax(
    values=_opts(
        "-e --rsh --port --timeout --contimeout --bwlimit --exclude --include --exclude-from "
        "--include-from --files-from -f --filter --password-file --log-file --log-file-format "
        "--out-format --chmod --chown --usermap --groupmap --compare-dest --copy-dest "
        "--link-dest --backup-dir --suffix -T --temp-dir --partial-dir --max-size --min-size "
        "--max-delete -B --block-size --checksum-choice --compress-choice --compress-level "
        "--skip-compress --iconv --info --debug --modify-window --stop-after --stop-at "
        "--sockopts -M --remote-option --rsync-path"
    ),
    hosts=_opts("--address"),
    operands="remote",
)
_TELNET = _Syntax(values=_opts("-l -n -e -X -k"), hosts=_opts("-b"), operands="first")
_HTTPIE = _Syntax(
    values=_opts(
        "-a --auth -A --auth-type -o --output --session --session-read-only --pretty -s --style "
        "-p --print --verify --cert --cert-key --cert-key-pass --ssl --ciphers --timeout "
        "--max-redirects --max-headers --format-options --response-charset --response-mime "
        "--default-scheme --boundary --unix-socket --bearer"
    ),
    hosts=_opts("--proxy --resolve --interface"),
)
_ARIA2C = _Syntax(
    values=_opts(
        "-d --dir -o --out -l --log -j --max-concurrent-downloads -s --split "
        "-x --max-connection-per-server -k --min-split-size -t --timeout --connect-timeout "
        "-m --max-tries --retry-wait -i --input-file -U --user-agent --header --referer "
        "--http-user --http-passwd --load-cookies --save-cookies -T --torrent-file "
        "-M --metalink-file --max-overall-download-limit --max-download-limit --conf-path "
        "--checksum"
    ),
    hosts=_opts(
        "--all-proxy --http-proxy --https-proxy --ftp-proxy --interface --multiple-interface "
        "--async-dns-server"
    ),
)
_NMAP = _Syntax(
    values=_opts(
        "-p -iL -iR --excludefile -oN -oX -oS -oG -oA -e -g --source-port --data --data-string "
        "--data-length --ttl --max-retries --host-timeout --scan-delay --max-scan-delay "
        "--min-rate --max-rate --script --script-args --top-ports --version-intensity "
        "--max-parallelism --min-parallelism --min-hostgroup --max-hostgroup --mtu --spoof-mac "
        "--resume --stylesheet --datadir --servicedb --versiondb --min-rtt-timeout "
        "--max-rtt-timeout --initial-rtt-timeout"
    ),
    hosts=_opts("--exclude -S -D --dns-servers --proxies -b"),
    cluster=False,  # -sS, -oN, -T4 are options of their own
)
_DIG = _Syntax(values=_opts("-c -f -k -p -q -t -y"), hosts=_opts("-b"), cluster=False)
_HOST = _Syntax(values=_opts("-c -m -N -R -t -W"))
_FTP = _Syntax(values=_opts("-P -o -r -q -T -u"), hosts=_opts("-s"))
_SOCAT = _Syntax(values=_opts("-b -t -T -lf -lp -L -W"), cluster=False)

_SYNTAX: dict[str, _Syntax] = {
    "curl": _CURL,
    "wget": _WGET,
    "ping": _PING,
    "ping6": _PING,
    "nc": _NC,
    "netcat": _NC,
    "ncat": _NCAT,
    "ssh": _SSH,
    "scp": _SCP,
    "sftp": _SFTP,
    "rsync": _RSYNC,
    "telnet": _TELNET,
    "http": _HTTPIE,
    "https": _HTTPIE,
    "xh": _HTTPIE,
    "aria2c": _ARIA2C,
    "nmap": _NMAP,
    "dig": _DIG,
    "host": _HOST,
    "nslookup": _Syntax(cluster=False),
    "ftp": _FTP,
    "socat": _SOCAT,
}
NETWORK_PROGRAMS = frozenset(_SYNTAX)
# socat addresses whose parameters are a path or a command, not a host.
_SOCAT_LOCAL = re.compile(
    r"(?i)^(exec|system|shell|open|file|create|gopen|pipe|unix\w*|abstract\w*|pty|readline|fd|tun|stdio)$"
)


def destinations(argv: list[str], redirects: Iterable[str] = ()) -> list[str]:
    """Hosts a command names: in URLs, in /dev/tcp paths, as the operands of network programs
    and the values of their options that name a host (a proxy, ``--resolve`` …).

    A network program's arguments are read with its syntax (:data:`_SYNTAX`): the value of
    ``-m 10`` or ``-c 3`` is a time or a count, and among its arguments a word of digits alone
    is never taken for a host (``nc host 80``), though ``inet_aton`` would read one as an
    address; inside a URL (``http://2852039166/``) it still is. The checker is advisory here:
    the egress proxy checks the address a program really connects to.
    """
    tokens = [*argv, *redirects]
    found = [m.group(1) for token in tokens for m in _URL.finditer(token)]
    found += [m.group(1) for token in tokens for m in DEV_NET.finditer(token)]
    name = argv[0].rsplit("/", 1)[-1] if argv else ""
    syntax = _SYNTAX.get(name)
    if syntax is not None:
        named: list[str] = []
        for option, value in _arguments(argv[1:], syntax):
            named += (
                _operand_hosts(value, name)
                if option is None
                else _option_hosts(option, value, name)
            )
        found += [host for host in named if not host.strip("[]").isdigit()]
    return found


def named_ports(argv: list[str], redirects: Iterable[str] = ()) -> dict[str, set[int]]:
    """The ports a command names for a host, where it says: a URL's (or its scheme's) and a
    ``/dev/tcp/host/port`` path's, by host as :func:`destinations` gives it. A host whose
    port the command does not spell out in one of these forms is not listed."""
    ports: dict[str, set[int]] = {}
    for token in [*argv, *redirects]:
        for m in _URL.finditer(token):
            port = url_port(token[m.start() :].split()[0])
            if port is not None:
                ports.setdefault(m.group(1), set()).add(port)
        for m in _DEV_NET_PORT.finditer(token):
            ports.setdefault(m.group(1), set()).add(int(m.group(2)))
    return ports


def _arguments(args: list[str], syntax: _Syntax) -> Iterable[tuple[str | None, str]]:
    """(option, value) for each option value that names a host, (None, operand) for each operand
    that may; the values of other options are skipped."""
    operands = 0
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            rest = args[i:]
            i = len(args)
        elif token.startswith("-") and len(token) > 1:
            option, eq, value = token.partition("=")
            attached = bool(eq)
            if option not in syntax.values | syntax.hosts:
                if token.startswith("--") or not syntax.cluster:
                    continue  # a flag (an option this table does not know is taken for one)
                # -sSm10: flags, then the first option that takes a value, with the rest as it
                letter = next(
                    (
                        j
                        for j, c in enumerate(token[1:], 1)
                        if f"-{c}" in syntax.values | syntax.hosts
                    ),
                    None,
                )
                if letter is None:
                    continue
                option, value = f"-{token[letter]}", token[letter + 1 :]
                attached = bool(value)
            if not attached and i < len(args):
                value = args[i]
                i += 1
            if option in syntax.hosts:
                yield option, value
            continue
        else:
            rest = [token]
        for operand in rest:
            operands += 1
            if syntax.operands == "first" and operands > 1:
                return
            if syntax.operands == "remote" and ":" not in operand:
                continue  # a local path
            yield None, operand


def _operand_hosts(token: str, program: str) -> list[str]:
    if "://" in token:
        return []  # read as a URL already
    if program == "socat":
        kind, colon, params = token.split(",", 1)[0].partition(":")
        return [] if not colon or _SOCAT_LOCAL.match(kind) else _option_hosts("", params, program)
    if program in ("http", "https", "xh") and token.startswith(":"):
        return ["localhost"]  # HTTPie's :3000/api is localhost:3000/api
    host = re.split(r"[/?#]", token, maxsplit=1)[0].rsplit("@", 1)[-1]
    if not host or not _HOSTISH.fullmatch(host):
        return []
    if host.startswith("["):
        return [host.split("]", 1)[0] + "]"]
    if program in ("scp", "sftp", "rsync") or host.count(":") == 1:
        return [host.split(":", 1)[0]]  # host:path, host::module, host:port
    return [host]  # a bare IPv6 address


def _option_hosts(option: str, value: str, program: str) -> list[str]:
    """The hosts an option's value names: ``127.0.0.1:3128`` (``-x``), ``a.com:443:10.0.0.1``
    (``--resolve``), ``user@jump1,jump2`` (``-J``), ``ProxyJump=h`` (``-o``), ``http_proxy=h`` (``-e``)."""
    value = value.strip().removeprefix("=")
    if option == "-o" and program in ("ssh", "scp", "sftp"):
        key, _, setting = re.sub(r"\s*=\s*|\s+", "=", value, count=1).partition("=")
        if key.lower() == "proxycommand":
            return [host for word in setting.split() for host in _option_hosts("", word, "")]
        if key.lower() not in ("proxyjump", "hostname", "bindaddress"):
            return []  # an option that names no host
        value = setting
    elif option in ("-e", "--execute") and program == "wget":
        value = value.partition("=")[2]  # a .wgetrc command: http_proxy=host:port
    hosts = []
    for piece in value.split(","):
        piece = piece.strip().rsplit("@", 1)[-1]
        if ip_of(piece) is not None:  # a bare IPv6 address: its colons are not ports
            hosts.append(piece)
            continue
        hosts += [p for p in _PIECE.findall(piece) if _HOSTISH.fullmatch(p)]
    return hosts


# -- hosts the rules name -----------------------------------------------------------------------


def domain_rules(
    settings: PermissionSettings, tools: tuple[str, ...]
) -> tuple[list[str], list[str]]:
    """(allowed, denied) domain patterns of ``Tool(domain:…)`` rules for these tools; ask
    rules count as denied (nobody can be asked in the middle of a connection).

    A pattern is ``host`` (that host and its subdomains), ``*.suffix`` (hosts under the
    suffix) or ``host:port`` — exactly that host on exactly that port (the form the egress
    proxy needs before it opens a loopback or private address); an IPv6 address is in
    brackets (``[::1]``, ``[::1]:8080``). Hosts are lower-cased. The rules of the run's
    input and people's approvals count as well as the settings'.
    """
    rules = rules_of(settings)

    def shown(spec: str) -> str:
        host, port = domain(spec)
        host = f"[{host}]" if ":" in host else host
        return host if port is None else f"{host}:{port}"

    def domains(effects: tuple[str, ...]) -> list[str]:
        return list(
            dict.fromkeys(
                shown(r.specifier)
                for e in effects
                for r in rules[e]
                if r.tool in tools and r.specifier and r.specifier.startswith("domain:")
            )
        )

    return domains(("allow",)), domains(("deny", "ask"))


def link_local(url: str) -> bool:
    """Cloud metadata services live on link-local addresses (169.254.169.254, fe80::/10)."""
    host = url_host(url)
    if host in ("metadata.google.internal", "metadata"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_link_local
    except ValueError:
        return False


def denied_host(settings: PermissionSettings) -> Callable[[str], bool]:
    """A predicate: may no request of an agent go to this URL?

    True for hosts a browser domain deny rule names, and always for link-local addresses
    (cloud metadata endpoints hand out credentials). Used on every request a page makes,
    redirect hops included, and on every hop of http_get.
    """
    rules = [
        r
        for r in rules_of(settings)["deny"]
        if fnmatch.fnmatchcase("browser_navigate", r.tool) and r.specifier
    ]

    def check(url: str) -> bool:
        return link_local(url) or any(
            matches(rule, "browser_navigate", url, None) for rule in rules
        )

    return check
