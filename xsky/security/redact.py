"""Secrets out of transcripts before anything is written or sent to a model.

Coding-agent transcripts are plaintext records of everything an agent saw: ``cat .env``,
pasted keys, ``curl -H "Authorization: Bearer …"``. Every text the skill pipeline takes
from a transcript passes :func:`redact` first; the ``.md`` views, atoms, staged files and
model requests only ever see the result.

Four families of rules, in the spirit of gitleaks / detect-secrets but tuned for prose:

- **prefixed tokens** whose shape alone says "credential" (``sk-ant-…``, ``ghp_…``,
  ``AKIA…``, JWTs, PEM private-key blocks, Azure storage keys and Entra client secrets,
  ``GOCSPX-…`` …);
- **context**: ``Authorization: Bearer x``, ``scheme://user:password@host``,
  ``--password=x``, ``AccountKey=`` / ``SharedAccessKey=`` in Azure connection strings, the
  ``sig=`` of an Azure SAS URL, a service-account JSON's ``private_key_id``;
- **assignments** of a *literal* value to a name that says secret (``DB_PASSWORD=…``,
  ``"client_secret": "…"``, ``export API_TOKEN=…``): not a placeholder (``${VAR}``,
  ``<token>``, ``***``, ``changeme``), nor too short to be one, nor code — a call
  (``token = Store.mint(id)``), an attribute (``api_key: self.key``), a variable
  (``token = access_token``), a type (``password: Optional[str]``), a format string
  (``"%H:%M:%S"``, ``"{token}"``), a number (``tokens: 12,345``) — nor a log line's status
  (``PASS: Build …``) or a name that holds no secret (``token_url``, ``tokenizer``);
- **high entropy**: any other assignment (``NAME = "value"``, ``NAME: value``) whose value
  looks random — see :func:`_high_entropy` for what keeps ids, digests, paths and words.

A match becomes ``[REDACTED:<rule>]``; the name of an assignment stays so the text still
reads. Redaction is idempotent. It errs towards removing: a false positive costs a
word of context, a false negative leaks a credential into every skill built from it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from xsky.security.literal import ANNOTATED, ASSIGN_HINT, WORD, is_code, secret_name

Rule = tuple[str, re.Pattern[str], int]  # (label, pattern, group holding the secret; 0 = all)

_B = r"(?<![A-Za-z0-9_\-])"  # token boundary on the left
_E = r"(?![A-Za-z0-9_\-])"  # and on the right

PREFIXED: list[Rule] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
            r"([\s\S]{1,20000}?)"
            r"(?=-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
        1,
    ),
    ("anthropic-key", re.compile(_B + r"sk-ant-[A-Za-z0-9_\-]{20,}"), 0),
    ("openai-key", re.compile(_B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"), 0),
    (
        "aws-access-key-id",
        re.compile(
            r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"
        ),
        0,
    ),
    (
        "github-token",
        re.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        0,
    ),
    ("gitlab-token", re.compile(_B + r"glpat-[A-Za-z0-9_\-]{20,}"), 0),
    ("slack-token", re.compile(_B + r"xox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    ("slack-webhook", re.compile(r"hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"), 0),
    ("google-api-key", re.compile(_B + r"AIza[0-9A-Za-z_\-]{35}"), 0),
    ("stripe-key", re.compile(_B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("webhook-secret", re.compile(_B + r"whsec_[A-Za-z0-9+/=]{20,}"), 0),
    ("huggingface-token", re.compile(_B + r"hf_[A-Za-z0-9]{30,}"), 0),
    ("npm-token", re.compile(_B + r"npm_[A-Za-z0-9]{36}" + _E), 0),
    ("sendgrid-key", re.compile(_B + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"), 0),
    ("twilio-key", re.compile(_B + r"SK[0-9a-f]{32}" + _E), 0),
    (
        "jwt",
        re.compile(_B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        0,
    ),
    # A storage account's (and Cosmos DB's) key: 64 random bytes in base64. Not after a "-":
    # a sha512-… integrity hash has the same shape.
    (
        "azure-storage-key",
        re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=_\-])"),
        0,
    ),
    # Entra ID (Azure AD) client secrets: three characters, a digit, "Q~", then 31–34 more.
    (
        "azure-client-secret",
        re.compile(
            r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"
        ),
        0,
    ),
    ("gcp-oauth-secret", re.compile(_B + r"GOCSPX-[A-Za-z0-9_\-]{20,}"), 0),
    # A whole service-account key file in base64 (CI variables hold them so): the prefixes
    # are '{\n  "type": "service_account"', '{"type":"service_account"' and '{"type": "…'.
    (
        "gcp-service-account",
        re.compile(
            r"(?:ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3VudC|eyJ0eXBlIjoic2VydmljZV9hY2NvdW50I|"
            r"eyJ0eXBlIjogInNlcnZpY2VfYWNjb3VudC)[A-Za-z0-9+/]*={0,2}"
        ),
        0,
    ),
]

CONTEXT: list[Rule] = [
    (
        "auth-header",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest|apikey)?\s*([^\s\"',;]{8,})"
        ),
        1,
    ),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{16,}=*)"), 1),
    (
        "url-password",
        re.compile(
            r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@\"'<>]{0,200}:([^\s@/\"'<>]{1,200})@"
        ),
        1,
    ),
    (
        "basic-auth",
        re.compile(r"(?:^|\s)(?:-u|--user)[= ][\"']?[^\s:\"']{1,100}:([^\s\"']{4,})"),
        1,
    ),
    (
        "mysql-password",
        re.compile(r"\bmysql(?:dump|admin|sh)?\b[^\n]{0,300}?\s-p[\"']?([^\s\"']{4,})"),
        1,
    ),
    ("cookie", re.compile(r"(?i)\b(?:set-)?cookie[\"']?\s*:\s*[\"']?([^\n\"']{8,})"), 1),
    (
        "registry-password",
        re.compile(
            r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm(?:\s+registry)?|oras)\s+login\b"
            r"[^\n]{0,300}?\s-p[= ]?[\"']?([^\s\"']{4,})"
        ),
        1,
    ),
    (
        "cli-secret",
        re.compile(
            r"(?i)--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|access-key|secret-key)(?:=|\s+)[\"']?([^\s\"']{4,})"
        ),
        1,
    ),
    # Azure connection strings: "DefaultEndpointsProtocol=https;AccountName=…;AccountKey=…",
    # Service Bus / Event Hubs "…;SharedAccessKeyName=…;SharedAccessKey=…", Cosmos DB
    # "AccountEndpoint=…;AccountKey=…". The value ends at the next ";".
    ("azure-storage-key", re.compile(r"(?i)\bAccountKey\s*=\s*([^\s;\"'<>]{16,})"), 1),
    (
        "azure-shared-access-key",
        re.compile(r"(?i)\bSharedAccessKey\s*=\s*([^\s;\"'<>]{16,})"),
        1,
    ),
    # In a service-account JSON, raw or itself inside a JSON string (quotes escaped).
    (
        "gcp-private-key-id",
        re.compile(r'private_key_id\\?"\s*:\s*\\?"([0-9a-fA-F]{40})\\?"'),
        1,
    ),
]

_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:pass(?:word|wd|phrase)?|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|"
    r"credentials?|auth[_\-]?key|session[_\-]?key|signing[_\-]?key|encryption[_\-]?key|pwd|dsn)[A-Za-z0-9_.\-]*"
)
_NAME_WORD = re.compile(r"(?i)^" + _NAME + "$")

_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|<[^>]*>?|\*+|x{3,}|\.{3,}|…|changeme|change_me|your[_\-].*|"
    r"example|none|null|nil|true|false|undefined|redacted|missing|unset|empty|hidden|masked|n/a|tbd|todo|\[redacted.*|required|optional|string|str|bytes|"
    r"(?:os|process|env|settings|config|self|cls|args|kwargs|params|request|req|ctx)\b.*|getenv.*|secrets?\..*)$"
)


def _is_placeholder(value: str) -> bool:
    if len(value) < 5 or (value.isdigit() and len(value) < 8):
        return True
    if value.startswith("[REDACTED"):
        return True
    return bool(_PLACEHOLDER.match(value))


def _label(rule: str) -> str:
    return f"[REDACTED:{rule}]"


def _replace_group(rule: str, group: int, placeholders: bool) -> Callable[[re.Match[str]], str]:
    tag = _label(rule)

    def sub(m: re.Match[str]) -> str:
        if group == 0:
            return tag
        whole, start, end = m.group(0), m.start(group) - m.start(0), m.end(group) - m.start(0)
        value = m.group(group)
        if value.startswith("[REDACTED") or (placeholders and _PLACEHOLDER.match(value)):
            return whole
        return whole[:start] + tag + whole[end:]

    return sub


_NOT_SECRET_NAMES = frozenset(
    {
        "pwd",
        "oldpwd",
        "password_min_length",
        "token_count",
        "tokens",
        "max_tokens",
        "sharedaccesskeyname",  # Azure's name of the key ("RootManageSharedAccessKey"), not the key
    }
)


_SUBS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (pattern, _replace_group(label, group, placeholders=False))
    for label, pattern, group in PREFIXED
] + [
    (pattern, _replace_group(label, group, placeholders=True)) for label, pattern, group in CONTEXT
]
# Each rule's cheapest necessary substring: most text holds none, and a substring test is
# far cheaper than a regex scan (ingestion runs over hundreds of megabytes).
_NEEDLES: list[tuple[str, ...]] = [
    ("PRIVATE KEY",),
    ("sk-ant-",),
    ("sk-",),
    ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ("glpat-",),
    ("xox",),
    ("hooks.slack.com",),
    ("AIza",),
    ("_live_", "_test_"),
    ("whsec_",),
    ("hf_",),
    ("npm_",),
    ("SG.",),
    ("SK",),
    ("eyJ",),
    ("==",),
    ("Q~",),
    ("GOCSPX-",),
    ("ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3VudC", "eyJ0eXBlIj"),
    ("uthorization", "UTHORIZATION"),
    ("earer", "EARER"),
    ("://",),
    ("-u", "--user"),
    ("mysql",),
    ("ookie", "OOKIE"),
    ("login",),
    ("--",),
    ("ccountKey", "ccountkey", "CCOUNTKEY"),
    ("haredAccessKey", "haredaccesskey", "HAREDACCESSKEY"),
    ("private_key_id",),
]


# Invisible characters a key may carry (pasted from a chat or a web page, or put there to
# get past a pattern): taken out before anything is matched.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
# A JSON \u escape of a printable ASCII character other than the quote and the backslash.
_ASCII_ESCAPE = re.compile(
    r"\\u00(2[013-9a-fA-F]|[3-4][0-9a-fA-F]|5[0-9a-bA-Bd-fD-F]|[67][0-9a-eA-E])"
)
# A character no URL needs to encode (letters, digits, - _ . ~), percent-encoded anyway.
_NEEDLESS_PERCENT = re.compile(r"%(2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])")
# A token long enough to be a secret said bare or to hold one encoded: one scan finds them,
# each then looked at (:func:`_token`).
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{24,}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,8192}={0,2}")
_HEX_RUN = re.compile(r"(?:[0-9A-Fa-f]{2}){20,4096}")


def redact(text: str) -> str:
    """The text with every credential it holds replaced by ``[REDACTED:<rule>]``. The text is
    kept as it is (an agent's log holds exactly what it saw, invisible characters and all)
    unless a credential shows only once invisible characters, needless percent-encoding or
    JSON's \\u escapes are read: then the text as read, redacted."""
    if not text:
        return text
    said = _redact_all(text)
    read = _normalised(text)
    if read != text:
        hidden = _redact_all(read)
        if hidden.count("[REDACTED:") > said.count("[REDACTED:"):
            return hidden
    return said


def _normalised(text: str) -> str:
    if _INVISIBLE.search(text):
        text = _INVISIBLE.sub("", text)
    if "%" in text:
        text = _NEEDLESS_PERCENT.sub(lambda m: chr(int(m[1], 16)), text)
    if "\\u00" in text:  # JSON's \u escapes of plain ASCII ("\u0073k\u002dant…")
        text = _ASCII_ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)
    return text


def _redact_all(text: str) -> str:
    text = _redact_plain(text)
    return _LONG_TOKEN.sub(_token, text) if len(text) >= 24 else text


def _redact_plain(text: str) -> str:
    for (pattern, sub), needles in zip(_SUBS, _NEEDLES, strict=True):
        if any(n in text for n in needles):
            text = pattern.sub(sub, text)
    if "sig=" in text or "SIG=" in text:
        text = _SAS_SIG.sub(_sas_signature, text)
    if ASSIGN_HINT.search(text):
        text = _assignments(text)
    text = _high_entropy(text)
    if "]\n" in text:  # a key that a terminal or a log wrapped onto the next line
        text = _CONTINUED.sub(_continued, text)
    return text


# A prefixed key redacted at a line's end, and the line after it starting with what looks like
# the rest of it: terminals and logs wrap long keys, and the second half is as secret.
_CONTINUED = re.compile(r"(\[REDACTED:[a-z0-9-]+\])(\r?\n)([A-Za-z0-9_\-]{8,})(?![A-Za-z0-9_\-])")


def _continued(m: re.Match[str]) -> str:
    rest = m[3]
    if not (any(c.isdigit() for c in rest) and any(c.isalpha() for c in rest)):
        return m[0]  # a word, not the rest of a key
    return f"{m[1]}{m[2]}{_label('continued')}"


def _token(m: re.Match[str]) -> str:
    """A long token: a credential inside base64 or hex (a `.env` piped through `base64`, a
    key printed as hex) redacts the run whole; a bare secret of AWS's shape (40 characters of
    base64 with '/' or '+') said with no name is redacted too."""
    value = m[0]
    if _HEX_RUN.fullmatch(value):
        return _decoded(value, bytes.fromhex)
    if _BASE64.fullmatch(value):
        said = _decoded(value, _b64)
        if said != value:
            return said
        return _bare_secret(value) if 40 <= len(value) <= 44 else value
    return value


def _bare_secret(value: str) -> str:
    # Its shape: '/' or '+' among upper case, lower case and digits, and random (a path's
    # 40 characters repeat themselves far more: 4.0 bits a character and over, it is not one).
    if not ("/" in value or "+" in value) or value.count("/") > 4:
        return value
    if not (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    ):
        return value
    return _label("aws-secret-key") if _entropy(value) >= 4.0 else value


def _decoded(value: str, decode: Callable[[str], bytes]) -> str:
    """``value`` redacted whole when it decodes to text that holds a credential."""
    try:
        inner = decode(value).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return value  # not that encoding, or binary (an image, a digest): no key in text
    if not all(c.isprintable() or c in "\n\r\t" for c in inner):
        return value
    return _label("encoded-secret") if _redact_plain(inner) != inner else value


def _b64(value: str) -> bytes:
    import base64
    import binascii

    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except binascii.Error as e:
        raise ValueError(str(e)) from None


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_OPERATOR = re.compile(r"[\"']?[ \t]*(?::=|=>|:|=)[ \t]*\(?[ \t]*")
_BARE_VALUE = re.compile(r"[^\s\"'`]+")
_QUOTED_MAX = 500


def _value_at(text: str, at: int) -> tuple[int, int] | None:
    """The span of the value an assignment gives: up to its closing quote when quoted (spaces,
    commas and all), else the bare token without trailing punctuation."""
    if at < len(text) and text[at] in "\"'":
        close = text.find(text[at], at + 1, at + 1 + _QUOTED_MAX)
        if close < 0:
            nl = text.find("\n", at + 1)
            close = min(len(text) if nl < 0 else nl, at + 1 + _QUOTED_MAX)
        return (at + 1, close) if close > at + 1 else None
    m = _BARE_VALUE.match(text, at)
    if m is None:
        return None
    value = m.group(0).rstrip(",;)]}")
    return (at, at + len(value)) if value else None


def _assignments(text: str) -> str:
    """The assignment rule, driven by the secret-ish words themselves.

    Code and logs say "key" and "token" everywhere; instead of a regex that tries every
    position, each hit of a word is widened to its whole name and only then checked for
    ``= value`` after it (the same rule as ``ASSIGNMENT``, at a fraction of the cost).
    """
    out: list[str] = []
    at = pos = 0
    n = len(text)
    for hit in ASSIGN_HINT.finditer(text):
        if hit.start() < pos:
            continue
        start, end = hit.start(), hit.end()
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        while end < n and text[end] in _NAME_CHARS:
            end += 1
        pos = end
        name = text[start:end]
        if not _NAME_WORD.search(name) or (start > 0 and text[start - 1] == "$"):
            continue
        op = _OPERATOR.match(text, end)
        span = _value_at(text, op.end()) if op is not None else None
        if op is None or span is None:
            continue
        pos = span[1]
        annotated = ANNOTATED.match(text, span[1])
        if annotated and op.group(0).strip(" \t\"'(").startswith(":"):
            op = _OPERATOR.match(text, annotated.end() - 1)  # `x: T = value`: the value
            span = _value_at(text, op.end()) if op is not None else None
            if op is None or span is None:
                continue
            pos = span[1]
        value = text[span[0] : span[1]]
        quote = text[start - 1] if start > 0 and text[start - 1] in "\"'" else ""
        if quote and quote not in op.group(0) and text[span[0] - 1 : span[0]] == quote:
            continue  # `'Password: ' pw`: the end of a string that names the field, no value
        if (
            _is_placeholder(value)
            or not secret_name(name, op.group(0), _NOT_SECRET_NAMES)
            or is_code(value, text, span, op.group(0), _env_style(text, start, name, op.group(0)))
        ):
            continue
        out.append(text[at : span[0]])
        out.append(_label("secret"))
        at = span[1]
    out.append(text[at:])
    return "".join(out)


def _env_style(text: str, start: int, name: str, op: str) -> bool:
    """``NAME=value`` as a shell or ``.env`` file writes it: CONSTANT_CASE, no spaces, at the
    start of a line or after ``export`` / a space (a command's environment)."""
    if op != "=" or name.upper() != name or not any(c.isalpha() for c in name):
        return False
    return start == 0 or text[start - 1] in " \t\n;"


# -- Azure SAS: the signature of a URL or token that also has a SAS version or expiry --------

_SAS_SIG = re.compile(r"(?i)(?<![A-Za-z0-9_])sig=([A-Za-z0-9%+/=]{16,})")
_SAS_FIELDS = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:sv|se)=")
_URL_END = re.compile(r"[\s\"'<>`]")


def _sas_signature(m: re.Match[str]) -> str:
    """``sig=…`` → ``sig=[REDACTED:azure-sas]`` when the same URL (or bare token) carries
    ``sv=`` or ``se=``: that pair is Azure's; a ``sig=`` alone may be anything."""
    text = m.string
    start = max(
        (e.end() for e in _URL_END.finditer(text, max(0, m.start() - 2000), m.start())), default=0
    )
    end_match = _URL_END.search(text, m.end())
    end = end_match.start() if end_match else len(text)
    if not _SAS_FIELDS.search(text, start, end):
        return m[0]
    return m[0][: m.start(1) - m.start()] + _label("azure-sas")


# -- high entropy: an assignment whose value looks random, whatever its name -----------------

_VALUE = re.compile(
    r"(?::=|=>|=|:)[ \t]*[\"']?([A-Za-z0-9+/_\-]{20,}={0,2})(?![A-Za-z0-9+/=_\-:@?&%#~\\]|\.\S)"
)
_HEX = re.compile(r"[0-9a-fA-F]+")
# Shapes that are ids or names however random they look: UUIDs and trace ids (hex groups),
# CONSTANT_CASE and snake/kebab-case identifiers, a sha512-… integrity hash.
_NOT_RANDOM = re.compile(
    r"[0-9a-fA-F]+(?:-[0-9a-fA-F]+)+|[A-Z0-9]+(?:[_\-][A-Z0-9]+)+|[a-z0-9]+(?:[_\-][a-z0-9]+)+|"
    r"(?:sha(?:1|256|384|512)|md5)-.*"
)
# Names whose values are digests and identifiers (a git SHA, an etag, a request or message
# id): any word of the name (``buildId`` → build, Id; ``X_TRACE_ID`` → X, TRACE, ID).
_ID_WORDS = frozenset(
    {
        *("sha", "hash", "digest", "checksum", "crc", "md5", "integrity", "fingerprint"),
        *("commit", "etag", "rev", "revision", "version", "uuid", "guid", "id", "ids"),
        *("trace", "traceparent", "tracestate", "span"),
    }
)
# Providers' public object ids: a message, a tool call, a request, a completion.
_PUBLIC_ID = re.compile(r"(?:msg|toolu|req|call|chatcmpl|resp|run|thread|asst|file|batch)[_\-]")
_DIGEST_LENGTHS = frozenset({40, 64, 128})  # hex SHA-1, SHA-256, SHA-512: digests, not keys…
_SIGNATURE_WORDS = frozenset({"signature", "sig", "hmac", "mac"})  # …unless an HMAC, named so
_MIN_BITS = 3.5  # Shannon entropy per character of a base64-ish value (hex: 3.0)
_MIN_WORDINESS = 0.3  # words per character: random text changes case and digit every 2 or 3


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _looks_random(value: str, signed: bool) -> bool:
    """Whether an assigned value is more likely a credential than an id, a digest or a name.

    At least 20 characters of base64 / base64url / hex with a letter and a digit; then
    hex must be 32+ characters, not a digest's length (unless the name says ``signed``,
    as in ``X-Amz-Signature``) and of entropy ≥ 3.0 bits per character; anything else ≥ 3.5 bits and split by case and digit changes into many short
    "words" (``4c1XInziSnMd`` → 4 c 1 X Inzi Sn Md), where an identifier makes few long ones
    (``PaymentServiceClient2``).
    """
    core = value.rstrip("=")
    if len(core) < 20 or _NOT_RANDOM.fullmatch(core) or _PUBLIC_ID.match(core):
        return False
    if not (any(c.isdigit() for c in core) and any(c.isalpha() for c in core)):
        return False
    if _HEX.fullmatch(core):
        digest = len(core) in _DIGEST_LENGTHS and not signed
        return len(core) >= 32 and not digest and _entropy(core) >= 3.0
    words = WORD.findall(core)
    letters = sum(map(len, words))
    return _entropy(core) >= _MIN_BITS and len(words) >= _MIN_WORDINESS * max(letters, 1)


def _name_before(text: str, at: int) -> tuple[str, int]:
    """The name an operator at ``at`` assigns to (``NAME = ``, ``"NAME": ``) and where it starts."""
    end = at
    while end > 0 and text[end - 1] in " \t":
        end -= 1
    if end > 0 and text[end - 1] in "\"'":
        end -= 1
    start = end
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:end], start


def _high_entropy(text: str) -> str:
    """The generic rule: the value of ``NAME = value`` / ``NAME: value`` when it looks random
    (:func:`_looks_random`) and its name does not say it is an id or a digest.

    Parts of URLs and paths (a "name" right after ``/``, ``@`` or ``:``, as in
    ``https://host:8443/…``; a value that starts ``//``) and shell expansions (``${X:-…}``)
    are no assignments; a value already redacted is left alone.
    """

    def sub(m: re.Match[str]) -> str:
        value = m[1]
        name, start = _name_before(text, m.start())
        if not name or not (name[0].isalpha() or name[0] == "_") or value.startswith("//"):
            return m[0]
        if start > 0 and text[start - 1] in "/@:$":
            return m[0]
        words = {w.lower() for w in WORD.findall(name)}
        if words & _ID_WORDS or not _looks_random(value, bool(words & _SIGNATURE_WORDS)):
            return m[0]
        return m[0][: m.start(1) - m.start()] + _label("high-entropy")

    return _VALUE.sub(sub, text)


def redact_value(value: object) -> object:
    """Redact every string inside a JSON-like value (dicts, lists, strings)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value
