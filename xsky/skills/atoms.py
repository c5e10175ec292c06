"""AtomTasks: a trajectory cut at semantic boundaries into the smallest units skills are made of.

The seed's fields, exactly (``atom_id, traj_id, offset_start, offset_end, intent, summary,
tags, used_skills, ux_score, pre_atom_id, post_atom_id, context_prefix, raw_segment``),
plus one extra field, ``provenance``: the raw anchors (file, byte range, first and last
record id) and how each judgement was made (model or heuristic, measured or self-reported).

This module is pure: the model, keywords and topic overlap, where an atom may start, and
the windows one TaskAgent call sees. Grouping units into drafts (by task) is
:mod:`xsky.skills.drafts`, how a prompt relates to the task :mod:`xsky.skills.followups`. Judging a draft and turning drafts into atom files is
:mod:`xsky.skills.atom_finish`. The LLM TaskAgent (activities/skills/task_agent.py) reuses
all of it and only replaces the boundary choice and the wording.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from xsky.skills.trajectory import RENDER_VERSION, Unit

INPUT_CAP = 30_000  # characters of trajectory one TaskAgent call sees (xskill's cap)


class RawAnchor(BaseModel):
    model_config = ConfigDict(extra="ignore")
    path: str
    byte_start: int
    byte_end: int
    uuid_first: str | None = None
    uuid_last: str | None = None
    call_ids: list[str] = Field(default_factory=list)


class SplitState(BaseModel):
    """Where the splitter stood at the end of an atom, so the next window or delta goes on
    exactly as if it had seen the same units in one go (the same bytes, the same atoms)."""

    model_config = ConfigDict(extra="ignore")
    has_prompt: bool = False  # a person's prompt names the task
    completed: bool = False  # the agent answered (or the turn ended) since the last prompt
    interrupted: bool = False  # the person interrupted since the last prompt
    # Trailing machine units (a compaction and its summary, a task start) not yet placed:
    # they go with the next prompt's atom if that prompt starts one, else they stay here.
    pending: list[dict[str, Any]] = Field(default_factory=list)
    last_prompt: list[str] | None = None  # keywords of the last prompt (re-asks)
    last_head: str | None = None  # the last prompt's text (a preamble it shares with the next)
    replied: bool = True  # the agent acted since the last prompt
    prompts: int = 0
    intent_head: str | None = None  # the first prompt (the intent)
    first_text: str | None = None  # the first answer or summary (intent while no prompt)
    origin: Literal["person", "model"] = "person"
    signals: dict[str, int] = Field(default_factory=dict)
    tools: dict[str, int] = Field(default_factory=dict)  # in first-use order
    words: dict[str, int] = Field(default_factory=dict)  # prompt words, for tags
    skills: list[str] = Field(default_factory=list)  # measured skill use
    last_answer: str | None = None
    person_interrupted: bool = False
    # The model's API failed and no answer came after it yet (a retry notice was the last word)
    api_retry: bool = False
    # The person rewound the conversation (or rolled back turns) past this work: it was
    # undone, and their next prompt begins a task of its own.
    rewound: bool = False
    # The agent changed files (an editing tool, or a shell command that writes): it did work,
    # whatever its answer asked after.
    edited: bool = False


class Provenance(BaseModel):
    model_config = ConfigDict(extra="ignore")
    # one per raw file the atom spans (a moved file adds one)
    raw: list[RawAnchor] = Field(default_factory=list)
    render_version: str = RENDER_VERSION
    split_by: Literal["model", "offline"] = "offline"
    ux_score_by: Literal["model", "heuristic"] = "heuristic"
    ux_signals: dict[str, int] = Field(default_factory=dict)
    used_skills_by: Literal["measured", "self-reported", "none"] = "none"
    # of the person's prompts: topic-shift checks across deltas
    keywords: list[str] = Field(default_factory=list)
    # "bytes s-e" of every delta that built this atom
    deltas: list[str] = Field(default_factory=list)
    ended: Literal["open", "completed", "interrupted"] = (
        "open"  # how its last prompt's turn ended, so far
    )
    # The person's session this atom belongs to: a subagent's atoms carry their parent's, so
    # "atoms of >= 2 distinct sessions" never counts a parent and its own subagent twice.
    session: str | None = None
    # "model": the atom's task came from a model-written prompt (a subagent's Task prompt);
    # such an atom may join a skill, never found one.
    origin: Literal["person", "model"] = "person"
    # The splitter's state after this atom's last unit (None: an atom from an older version).
    split: SplitState | None = None


class AtomTask(BaseModel):
    model_config = ConfigDict(extra="ignore")
    atom_id: str
    traj_id: str
    offset_start: int
    offset_end: int
    intent: str
    summary: str
    tags: list[str] = Field(default_factory=list)
    used_skills: list[str] = Field(default_factory=list)
    ux_score: int = Field(ge=1, le=10)
    pre_atom_id: str | None = None
    post_atom_id: str | None = None
    context_prefix: str = ""
    raw_segment: str = ""
    provenance: Provenance = Field(default_factory=Provenance)


def atom_id(traj_id: str, number: int) -> str:
    return f"atom_{traj_id}_{number:04d}"


def atom_number(aid: str) -> int:
    return int(aid.rsplit("_", 1)[1])


# -- boundaries and topic shifts ---------------------------------------------------------------

# Words of any alphabet (Latin with its accents, Cyrillic, Greek, …), runs of Hangul (Korean
# words are short: 결제 "payment"), of Han characters (Chinese; Japanese kanji) and of katakana
# (Japanese loanwords, often a task's very topic: デモ "demo", トランザクション "transaction").
# Before, only ASCII letters and Han were read: a Korean or Russian prompt had no keyword, so
# every prompt after a session's first was taken for a reply to it — one atom for the session.
_CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af"
_LETTER = rf"[^\W\d_{_CJK}]"  # a letter of an alphabet
_WORD = re.compile(
    rf"{_LETTER}(?:[^\W{_CJK}]|-){{2,}}"
    r"|[\uac00-\ud7a3]{2,}|[\u4e00-\u9fff]{2,}|[\u30a1-\u30fa\u30fc]{2,}"
)
STOPWORDS = frozenset(
    """
the and for with that this from have has had was were are but not you your yours can could would should will
into onto about then than them they their there here what when where which while who whom why how all any
some more most other such only own same too very just also now please make sure let lets use using used get got
its it's it’s our out over under again further once both each few nor off did does doing done being been
want need like add fix run file files code one two new see look way thing things work works working
""".split()
)
# Verbs of requests: they say what was asked, not what it was about (kept out of tags and skill names).
VERBS = frozenset(
    """
write writes wrote adds added adding create creates created make makes made update updates updated explain explains
show shows tell give find check set sets put build builds implement implements help change changes changed remove
removes delete deletes try tries want wants need needs can could should would will pull push save saves keep
""".split()
)
CORRECTION = re.compile(
    r"(?i)^\s*(no\b|nope\b|wrong\b|that'?s (not|wrong)|this is (not|wrong)|not what|that is not|doesn'?t work|"
    r"didn'?t work|still (not|fail|broken|doesn)|it still\b|you (broke|forgot|missed)|undo\b|revert\b|"
    r"stop\b|wait\b|actually\b|instead\b|不对|错了|不是|还是不行|撤销|"
    r"不對|錯了|還是不行|撤銷|"  # (traditional characters: Taiwan, Hong Kong)
    # Japanese: "wrong", "not that", "really (only that)?", "still doesn't work", "undo", "redo"
    r"違う|違います|ちがう|そうじゃな|そうではな|(?:本当|ほんと)に?[^\n]{0,30}?[？?]|"
    r"まだ(?:動かない|動きません|直って|だめ|ダメ|エラー|失敗)|元に戻して|やり直して|"
    # Korean: "no", "(that's) wrong", "still not …", "undo it", "do it again"
    r"아니(?:요|야)?(?=[\s,.!?]|$)|틀렸|틀려|잘못(?:됐|되었|했)|아직(?:도)? 안|되돌려|다시 해)"
)
# "go on" keeps the task going even after the agent answered; "also …" adds to a task still in progress.
CONTINUE = re.compile(
    r"(?i)^\s*(ok\b|okay\b|yes\b|yep\b|sure\b|continue\b|go on\b|go ahead\b|do it\b|proceed\b|"
    # "可以" alone is "fine, go ahead"; "可以幫我…" opens a request ("can you help me …")
    r"try again\b|again\b|keep going\b|可以(?=\s*[。！!.]?\s*$)|(?:请|請)?(?:继续|繼續)|"
    # "can you retry" after the model's API failed mid-turn: the same task, asked again
    r"((please|pls)\s+|(can|could|would|will) you\s+(please\s+)?)(retry|re-try|try (it |that )?again)\b|"
    r"re-?try( please)?\s*[.!?]?\s*$|重试|再试|重試|再試|"
    r"続けて|続行|進めて|계속)"  # Japanese: "go on", "carry on", "proceed"; Korean: "go on"
)
SEQUEL = re.compile(r"(?i)^\s*(also\b|and\b|plus\b|then\b|one more\b|same\b)")
ACKNOWLEDGEMENT = re.compile(
    r"(?i)^\s*((thanks|thank you|thx|perfect|great|awesome|nice|lgtm|looks good|cool|excellent|works now|谢谢|謝謝|感谢|感謝|好的)\b[^\n]{0,60}$|"
    # Japanese "thank you (very much)", "understood": a word that runs on with no space
    r"(?:本当に|ほんとに)?ありがとう[^\n]{0,15}$|了解(?:です|しました)?[。！!]?\s*$|"
    r"(?:고마워|고맙습니다|감사합니다|감사해요)[^\n]{0,15}$)"  # Korean "thank you"
)
REVERT_COMMAND = re.compile(r"git (checkout --|restore\b|revert\b|reset --hard|stash\b)")
# Tools that change files: a task that used one did something, whatever it asked after.
EDIT_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "write_file", "edit_file"}
)
# Tools that run a shell command (Claude Code, Codex's shells and unified exec, Gemini CLI).
SHELL_TOOLS = frozenset(
    {"Bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec"}
    | {"run_shell_command"}
)
# How a command changes files: a patch (Codex's apply_patch run as a command), an in-place
# edit, output redirected to a file, a program whose job is writing (its first operand the
# file), a project's package manager or git changing the tree, PowerShell's writers, Python
# writing a file. A write to a tool's own hidden folder in the home (~/.superstack/telemetry,
# a skill's log) or to /tmp is no change to the person's work.
_PATCH_COMMAND = re.compile(
    r"(?:^|[\s;&|('\"])(?:apply_patch|applypatch)\b|^\*\*\* Begin Patch", re.M
)
_IN_PLACE = re.compile(
    r"(?:^|[\s;&|(])(?:g?sed|perl|ruby)\s+(?:-[^\s]*\s+)*?(?:-[a-zA-Z]*i(?:\.\w+)?\b|--in-place)"
)
_REDIRECT = re.compile(r"(?:^|\s)(?:\d|&)?>>?\|?\s*([^\s;&|<>()]+)")
_WRITER = re.compile(
    r"(?:^|[;&|(\n])\s*(?:sudo\s+)?"
    r"(cp|mv|rm|rmdir|mkdir|touch|ln|install|truncate|tee|unzip|patch|"
    r"Set-Content|Add-Content|Out-File|New-Item|Remove-Item|Copy-Item|Move-Item|Rename-Item)"
    r"((?:[ \t]+[^\s;&|]+)*)",
    re.I,
)
_PROJECT_WRITER = re.compile(
    r"(?:^|[;&|(\n])\s*(?:git\s+(?:apply|am|commit|mv|rm|restore|stash|merge|rebase|cherry-pick|"
    r"reset|init|clone|checkout)|(?:npm|pnpm|yarn|bun)\s+(?:i|install|add|remove|uninstall|init|"
    r"create)|npx\s+(?:--yes\s+|-y\s+)?create-|(?:uv|poetry|cargo)\s+(?:add|init|new|remove)|"
    r"pip3?\s+install)\b"
)
_PY_WRITE = re.compile(r"\.write_(?:text|bytes)\(|\bopen\([^)]*,\s*[\"'][wax]b?\+?[\"']")
_PS_ASIDE = re.compile(
    r"(?i)\$HOME\b|\$env:(?:USERPROFILE|HOME|TEMP|TMP|APPDATA|LOCALAPPDATA)\b|~[\\/]\."
)
_ASIDE = re.compile(r"^[\"']?(?:(?:~|\$HOME|\$\{HOME\})/\.|/tmp/|/dev/|\$TMPDIR|\d*$)")


def _operand(words: str) -> str | None:
    """The first word of ``words`` that is no option."""
    return next((w for w in words.split() if not w.startswith("-")), None)


def changes_files(tool: str | None, command: str) -> bool:
    """Whether a call changed the person's files: an editing tool, or a shell command that
    writes (real12: a Codex agent that changed files with ``apply_patch`` run through
    ``exec_command``, ``sed -i`` or ``cat > f`` and then asked a question was read as one
    that only asked). What the command does is read from its text, not run."""
    if tool in EDIT_TOOLS:
        return True
    if tool not in SHELL_TOOLS:
        return False
    if _PATCH_COMMAND.search(command) or _IN_PLACE.search(command):
        return True
    if _PROJECT_WRITER.search(command) or _PY_WRITE.search(command):
        return True
    if any(not _ASIDE.match(m.group(1)) for m in _REDIRECT.finditer(command)):
        return True
    for m in _WRITER.finditer(command):
        if "-" in m.group(1):  # PowerShell: a parameter's value is no operand; the home's
            if not _PS_ASIDE.search(m.group(2)):  # folders and the temp folder are aside
                return True
            continue
        target = _operand(m.group(2))
        if target is not None and not _ASIDE.match(target):
            return True
    return False


SIMILAR = 0.3  # keyword overlap (Jaccard) above which a prompt is the same topic


def keywords(text: str, limit: int = 40) -> list[str]:
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        if w not in STOPWORDS and not w.isdigit():
            seen.setdefault(w, None)
            if len(seen) >= limit:
                break
    return list(seen)


def similarity(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def containment(a: list[str], b: list[str]) -> float:
    """How much of the shorter keyword list the other holds (a re-ask repeats the first ask)."""
    sa, sb = set(a), set(b)
    if len(sa) < 2 or len(sb) < 2:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def is_boundary(u: Unit) -> bool:
    """Where an atom may start: a real prompt, a compaction, a task start."""
    return u.kind in ("user", "compaction") or u.marker in ("task_start", "compaction")


def boundary_indexes(units: list[Unit]) -> list[int]:
    """Indexes of the units an atom may start at; a boundary that only markers and injected
    context separate from the previous one (a task start, then its prompt) is the same one."""
    found: list[int] = []
    quiet = False  # only markers / meta since the last boundary
    for i, u in enumerate(units):
        if is_boundary(u):
            if not (found and quiet):
                found.append(i)
            quiet = True
        elif u.kind not in ("marker", "meta"):
            quiet = False
    return found


def _is_compaction(u: Unit) -> bool:
    return u.kind == "compaction" or u.marker == "compaction"


# -- windows of a delta --------------------------------------------------------------------------


def windows(units: list[Unit], cap: int = INPUT_CAP) -> list[list[Unit]]:
    """Units cut into windows of at most ``cap`` characters of view, at unit boundaries,
    preferring to cut before a prompt; one oversized unit is a window of its own."""
    out: list[list[Unit]] = []
    current: list[Unit] = []
    for u in units:
        if current and u.e - current[0].s > cap:
            cut = len(current)
            for j in range(len(current) - 1, 0, -1):  # the last prompt in the window, if any
                if is_boundary(current[j]) and current[j].s - current[0].s >= cap // 2:
                    cut = j
                    break
            out.append(current[:cut])
            current = current[cut:]
        current.append(u)
    if current:
        out.append(current)
    return out
