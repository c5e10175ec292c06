"""Literal values and code: what the assignment rule of :mod:`xsky.security.redact` may take.

Transcripts are full of code that *looks* like a secret assignment — ``token =
Store.mint(id)``, ``api_key: self.key``, ``password: Optional[str]``, ``"%H:%M:%S"`` —
and a skill built from them needs exactly those lines. A value is redacted for its name
only when it is a literal: a quoted string that interpolates nothing, or a bare token that
is not a call, an attribute, a variable, a type, a number or an expansion.
"""

from __future__ import annotations

import re

ASSIGN_HINT = re.compile(r"(?i)pass|secret|token|key|credential|pwd|dsn")
WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
ANNOTATED = re.compile(r"[ \t]*=(?!=)")  # `name: Type = value`: the value follows the `=`
_REF = r"[A-Za-z_$][\w$]*"
_CALL = re.compile(
    rf"(?:(?:await|new|yield|return|typeof|not)\s+)?{_REF}(?:(?:\.|::|->|\?\.){_REF})*(?:<[^>]*>)?[(\[<]"
)
_ATTRIBUTE = re.compile(rf"{_REF}(?:(?:\.|::|->|\?\.){_REF})+")
_IDENT = re.compile(rf"{_REF}")
_KEYWORDS = frozenset(
    "await new yield return typeof lambda async function fn move match if not and or "
    "def let const var mut ref dyn impl".split()
)
_DIGIT = re.compile(r"\d")
_NUMBER = re.compile(r"\d[\d,._:]*[A-Za-z%]{0,3}")
# Interpolation: "{token}", "{{ vault_pw }}", "${VAR}", "$(cmd)", "%(name)s", and a strftime
# or printf format of two directives or more ("%H:%M:%S"); one "%40s" may be an escaped "@".
_FORMAT = re.compile(r"\{[^{}\n]{0,80}\}|\$[({]|%\(\w+\)|%[a-zA-Z][^%]{0,3}%[a-zA-Z]")
_CODE_START = tuple("${%&*!@`<[(")  # an expansion, a format, a reference, a YAML tag, a decorator
_NOT_SECRET_WORDS = frozenset(
    "url uri endpoint type kind name names path file dir id ids length len count limit ttl "
    "expiry expires timeout field header env var prefix format fmt pattern regex policy "
    "required enabled min max size provider mode label hint placeholder prompt validator "
    "manager store service class cls factory handler callback usage used budget ref refs".split()
)
_NOT_SECRET_NAMES_EXACT = frozenset({"tokenizer", "tokenizers", "passthrough", "passive"})
_LOG_STATUS = re.compile(r"(?i)pass(?:ed|es|ing)?")


def secret_name(name: str, op: str, not_secret: frozenset[str]) -> bool:
    """Whether a name says its value is a secret (not its URL, type, length or log status)."""
    lower = name.lower()
    if lower in not_secret or lower in _NOT_SECRET_NAMES_EXACT:
        return False
    if ":" in op and "=" not in op and _LOG_STATUS.fullmatch(name):
        return False  # `PASS: Build …`, `PASSED: test_login` — a test log, not `pass=…`
    words = [w.lower() for w in WORD.findall(name)]
    return not (len(words) > 1 and words[-1] in _NOT_SECRET_WORDS)


def is_code(value: str, text: str, span: tuple[int, int], op: str = "=", env: bool = False) -> bool:
    """Whether an assigned value is code (a call, an attribute, a variable, a type, a format
    string, a number) rather than a literal secret. ``env``: a shell or ``.env`` assignment
    (``NAME=value``), where a bare word is a string whatever it looks like."""
    quoted = span[0] > 0 and text[span[0] - 1] in "\"'"
    if _FORMAT.search(value):
        return True  # "%H:%M:%S", "{token}", f"{x}", "{{ vault_pw }}", "$(cmd)", "${VAR}"
    if quoted:
        return False  # any other quoted string is a literal
    if value.startswith(_CODE_START):
        return True
    if env:
        return bool(_CALL.match(value))  # `SECRET_KEY=get_key()`; else `DB_PASSWORD=hunter2_x`
    if _CALL.match(value) or _ATTRIBUTE.fullmatch(value):
        return True
    if _NUMBER.fullmatch(value) and not value.isdigit():
        return True  # 12,345 · 4.5k · 1_000_000 (a long run of digits may be a PIN or a key)
    if not _IDENT.fullmatch(value):
        return False
    if value in _KEYWORDS or ASSIGN_HINT.search(value):
        return True  # `= await …`, `token = token`, `apiKey: apiKey`
    end_of_line = text[span[1] : span[1] + 200].split("\n", 1)[0].strip() == ""
    if ":" in op and "=" not in op and end_of_line and (value.islower() or _DIGIT.search(value)):
        return False  # YAML: `password: hunter2_prod`, `api_key: aBcD3fG9` are strings
    if ("_" in value and any(c.islower() for c in value)) or re.search(r"^[a-z]+[A-Z]", value):
        return True  # a snake_case or camelCase variable
    after = text[span[1] : span[1] + 3].lstrip(" \t")
    return value[0].isupper() and after[:1] in (",", ")", ";", ">", "|", "]")  # a type
