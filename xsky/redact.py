"""Secrets out of transcripts before anything is written or sent to a model.

Coding-agent transcripts are plaintext records of everything an agent saw: ``cat .env``,
pasted keys, ``curl -H "Authorization: Bearer …"``. Every text the skill pipeline takes
from a transcript passes :func:`redact` first; the ``.md`` views, atoms, staged files and
model requests only ever see the result.

Three families of rules, in the spirit of gitleaks / detect-secrets but tuned for prose:

- **prefixed tokens** whose shape alone says "credential" (``sk-ant-…``, ``ghp_…``,
  ``AKIA…``, JWTs, PEM private-key blocks …);
- **context**: ``Authorization: Bearer x``, ``scheme://user:password@host``,
  ``--password=x``;
- **assignments** whose *name* says secret (``DB_PASSWORD=…``, ``"client_secret": "…"``,
  ``export API_TOKEN=…``), unless the value is a placeholder (``${VAR}``, ``<token>``,
  ``***``, ``changeme``) or too short to be one.

A match becomes ``[REDACTED:<rule>]``; the name of an assignment stays so the text still
reads. Redaction is idempotent. It errs towards removing: a false positive costs a
word of context, a false negative leaks a credential into every skill built from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

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
        "cli-secret",
        re.compile(
            r"(?i)--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|access-key|secret-key)(?:=|\s+)[\"']?([^\s\"']{4,})"
        ),
        1,
    ),
]

_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:pass(?:word|wd|phrase)?|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|"
    r"credentials?|auth[_\-]?key|session[_\-]?key|signing[_\-]?key|encryption[_\-]?key|pwd|dsn)[A-Za-z0-9_.\-]*"
)
_ASSIGN_HINT = re.compile(r"(?i)pass|secret|token|key|credential|pwd|dsn")
_NAME_WORD = re.compile(r"(?i)^" + _NAME + "$")

_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|<[^>]*>?|\*+|x{3,}|\.{3,}|…|changeme|change_me|your[_\-].*|"
    r"example|none|null|nil|true|false|undefined|redacted|\[redacted.*|required|optional|string|str|bytes|"
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
    {"pwd", "oldpwd", "password_min_length", "token_count", "tokens", "max_tokens"}
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
    ("uthorization", "UTHORIZATION"),
    ("earer", "EARER"),
    ("://",),
    ("-u", "--user"),
    ("mysql",),
    ("ookie", "OOKIE"),
    ("--",),
]


def redact(text: str) -> str:
    """The text with every credential it holds replaced by ``[REDACTED:<rule>]``."""
    if not text:
        return text
    for (pattern, sub), needles in zip(_SUBS, _NEEDLES, strict=True):
        if any(n in text for n in needles):
            text = pattern.sub(sub, text)
    if _ASSIGN_HINT.search(text):
        text = _assignments(text)
    return text


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
    for hit in _ASSIGN_HINT.finditer(text):
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
        if span is None:
            continue
        pos = span[1]
        value = text[span[0] : span[1]]
        if _is_placeholder(value) or name.lower() in _NOT_SECRET_NAMES:
            continue
        out.append(text[at : span[0]])
        out.append(_label("secret"))
        at = span[1]
    out.append(text[at:])
    return "".join(out)


def redact_value(value: object) -> object:
    """Redact every string inside a JSON-like value (dicts, lists, strings)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value
