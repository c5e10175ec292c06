"""The Agent Skills authoring rules a SKILL.md is held to before it is committed.

The reference validator checks the format; these check that the folder is a *skill* and
not a transcript dump (Anthropic's "Skill authoring best practices"):

- the description is the trigger: a sentence saying what the skill does and when, not a
  list of keywords;
- no absolute path of the machine the sessions were recorded on (``/home/…``,
  ``/Users/…``, ``C:\\…``, ``/tmp/…``, that machine's home): the reader's machine differs;
- no atom or trajectory id (``atom_…``, ``traj_…``): the reader's agent cannot open them;
- no quotes of the recorded prompts: neither a "When to use" list of raw prompts nor a
  sentence copied from one; no tool-call counts passed off as steps.

Every message says what is wrong and where, never the offending text: problems travel
into workflow histories (an edit's result), and that text came from transcripts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_PATHS = (
    (re.compile(r"(?<![\w.~$/:-])/home/[A-Za-z0-9._-]+"), "/home/…"),
    (re.compile(r"(?<![\w.~$/:-])/Users/[A-Za-z0-9._-]+"), "/Users/…"),
    (re.compile(r"(?<![\w.~$/:-])/root/"), "/root/…"),
    (re.compile(r"(?<![\w.~$/:-])/(?:private/)?tmp/"), "/tmp/…"),
    (re.compile(r"(?<![\w.~$/:-])/var/folders/"), "/var/folders/…"),
    (re.compile(r"(?<![A-Za-z0-9])[A-Za-z]:\\(?:\\)?[A-Za-z0-9._ -]+"), "C:\\…"),
)
# In shipped scripts a scratch file under /tmp is ordinary; a person's home is not.
_SCRIPT_KINDS = ("/home/…", "/Users/…", "/root/…", "C:\\…")
_IDS = re.compile(r"\b(?:atom_[A-Za-z0-9]+_[A-Za-z0-9_]+|traj_(?:cc|codex|xsky)_[A-Za-z0-9_]+)")
_TOOL_COUNTS = re.compile(r"\b\d+ tool calls?\b|\b[A-Za-z_]+ ×\d+")
_WHEN_HEADING = re.compile(r"(?im)^#{1,6}\s*when to use\b.*$")
_HEADING = re.compile(r"(?m)^#{1,6}\s")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_PROMPTISH = re.compile(
    r"(?i)^\W*(please\b|can you\b|could you\b|would you\b|i want\b|i need\b|i'd like\b|i'm\b|im\b|"
    r"let'?s\b|help me\b|hey\b|hi\b|ok\b|okay\b|so\b|now\b|i\b|my\b|we\b|our\b)"
)
_WORDS = re.compile(r"[a-z0-9']+")
FUNCTION_WORDS = frozenset(
    """
a an the to of in on for with when and or is are it its this that these by from as at into onto you your
use used uses using how what before after if while so then than be can will should must not no any each
""".split()
)
QUOTE_WORDS = 8  # this many words in a row from a recorded prompt is a quote


def machine_homes(paths: Iterable[str]) -> list[str]:
    """The recording machine's home folders, from the raw transcript paths an atom points to
    (``/data/u/ana/.claude/projects/…`` → ``/data/u/ana``), for homes the patterns miss."""
    found: dict[str, None] = {}
    for path in paths:
        m = re.match(r"^(.+?)/\.(?:claude|codex|xsky)(?:/|$)", path.replace("\\", "/"))
        if m and len(m.group(1)) > 1:
            found.setdefault(m.group(1), None)
    return list(found)


def path_problems(
    where: str, text: str, homes: Sequence[str] = (), script: bool = False
) -> list[str]:
    out = []
    homes_re = [re.compile(re.escape(h.rstrip("/")) + r"(?:/|\b)") for h in homes if len(h) > 1]
    for n, line in enumerate(text.splitlines(), start=1):
        kinds = [k for rx, k in _PATHS if rx.search(line) and (not script or k in _SCRIPT_KINDS)]
        if not kinds and any(rx.search(line) for rx in homes_re):
            kinds = ["the recording machine's home"]
        if kinds:
            out.append(
                f"{where} line {n}: an absolute path of the recording machine ({kinds[0]}); "
                "the skill runs elsewhere: write paths relative to the project, or ~ / $HOME"
            )
    return out


def id_problems(where: str, text: str) -> list[str]:
    return [
        f"{where} line {n}: an atom or trajectory id; the agent reading the skill cannot open it "
        "(keep provenance in the commit message)"
        for n, line in enumerate(text.splitlines(), start=1)
        if _IDS.search(line)
    ]


def keyword_soup(description: str) -> bool:
    """A description that is a list of words, not a sentence a person would say."""
    words = _WORDS.findall(description.lower())
    if len(words) < 4:
        return False
    parts = [p.strip() for p in re.split(r"[,;|/]", description) if p.strip()]
    if len(parts) >= 4 and sum(len(p.split()) <= 2 for p in parts) >= 0.75 * len(parts):
        return True
    function = sum(w in FUNCTION_WORDS for w in words)
    if len(words) >= 6 and function / len(words) < 0.12:
        return True
    # a "sentence" of six or more words without one function word is a keyword list
    for sentence in re.split(r"[.!?]\s", description):
        ws = _WORDS.findall(sentence.lower())
        if len(ws) >= 6 and not any(w in FUNCTION_WORDS for w in ws):
            return True
    return False


def _norm(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def _shingles(words: list[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def quotes(text: str, prompts: Sequence[str], size: int = QUOTE_WORDS) -> bool:
    """Whether ``text`` repeats ``size`` words in a row of a recorded prompt (or all of a
    shorter one of at least five words)."""
    words = _norm(text)
    for prompt in prompts:
        p = _norm(prompt)
        n = min(size, len(p))
        if n >= 5 and _shingles(words, n) & _shingles(p, n):
            return True
    return False


def when_to_use_items(body: str) -> list[str]:
    m = _WHEN_HEADING.search(body)
    if not m:
        return []
    rest = body[m.end() :]
    nxt = _HEADING.search(rest)
    section = rest[: nxt.start()] if nxt else rest
    return [i.group(1) for line in section.splitlines() if (i := _ITEM.match(line))]


def is_raw_prompt(item: str, prompts: Sequence[str]) -> bool:
    text = item.strip().strip('"“”*_`')
    return bool(_PROMPTISH.match(text) or text.endswith("?") or quotes(text, prompts, size=6))


def body_problems(body: str, prompts: Sequence[str]) -> list[str]:
    found = []
    items = when_to_use_items(body)
    raw = [i for i in items if is_raw_prompt(i, prompts)]
    if raw:
        found.append(
            f"SKILL.md: the 'When to use' list holds raw prompts ({len(raw)} of {len(items)} items); "
            "describe the situations in your own words, the trigger belongs in the description"
        )
    quoted = [n for n, line in enumerate(body.splitlines(), start=1) if quotes(line, prompts)]
    if quoted:
        found.append(
            f"SKILL.md line {quoted[0]}: quotes a recorded prompt ({len(quoted)} line(s)); "
            "write the step, not the transcript"
        )
    if _TOOL_COUNTS.search(body):
        found.append("SKILL.md: tool-call counts are not steps; say which command to run and why")
    return found


# A download run as it arrives: `curl … | sh`, `wget -qO- … | sudo bash`, `bash <(curl …)`,
# `sh -c "$(curl …)"`, PowerShell's `iwr … | iex` / `iex (iwr …)`. A skill is learned from
# transcripts a prompt injection may have written, and an agent follows its steps: what it
# would fetch and run unseen is named for a person to check instead.
_FETCHERS = (
    r"(?:curl|wget|fetch|iwr|irm|Invoke-WebRequest|Invoke-RestMethod|DownloadString|DownloadFile)"
)
_SHELLS = r"(?:ba|z|da|k|fi)?sh|pwsh|powershell|iex|Invoke-Expression"
# An interpreter runs what is piped in only when it is given no script: `python3`, `python3 -`
# (not `python3 -m json.tool`, a pretty-printer).
_INTERPRETERS = (
    r"(?:python[0-9.]*|perl|ruby|node|deno|bun|php)(?=\s*$|\s*[;&|)`'\"]|\s+-(?:[\s;&|)`'\"]|$))"
)
# A runner as a pipe or a substitution names it: after sudo and its flags, a path, `env`.
_PREFIX = r"(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?"
_RUNNER = rf"{_PREFIX}(?:(?:{_SHELLS})\b|{_INTERPRETERS})"
_FETCH_AND_RUN = re.compile(
    # a download piped, through whatever else, into a shell or interpreter
    rf"(?i)\b{_FETCHERS}\b[^\n]*\|\s*{_RUNNER}"
    # a shell or interpreter given a download's output: sh -c "$(curl …)", bash <(curl …)
    rf"|\b{_PREFIX}(?:{_SHELLS}|python[0-9.]*|perl|ruby|node)\s+(?:-\S+\s+)*(?:<\(|\"?\$\(|\()[^\n]*?\b{_FETCHERS}\b"
    # sourced: source <(curl …), . <(wget …)
    rf"|(?:^|[\s;&|(`'\"])(?:source|\.)\s+<\(\s*[^\n]*?\b{_FETCHERS}\b"
    # PowerShell's: iex ((New-Object Net.WebClient).DownloadString(…))
    rf"|\b(?:iex|Invoke-Expression)\b[^\n]*?\b{_FETCHERS}\b"
)


def fetch_and_run_problems(where: str, text: str) -> list[str]:
    """A step that runs what it downloads, unseen (above)."""
    # A command continued over lines (a backslash at a line's end) is read as one line.
    lines = text.splitlines()
    for n, line in enumerate(lines, start=1):
        while line.endswith("\\") and n < len(lines):
            line = line[:-1] + " " + lines[n]
            n += 1
        if _FETCH_AND_RUN.search(line):
            return [
                f"{where} line {n}: runs what it downloads, unseen; a skill must not pipe a "
                "download into a shell or interpreter — name the package, or download, check "
                "and then run"
            ]
    return []


def description_problems(description: str, prompts: Sequence[str]) -> list[str]:
    found = []
    if keyword_soup(description):
        found.append(
            "the description reads as a list of keywords; say in a sentence what the skill does "
            "and when to use it, in the words a user would use"
        )
    if quotes(description, prompts):
        found.append("the description quotes a recorded prompt; describe the kind of task instead")
    return found
