"""The offline provider: deterministic answers with no model, labelled in every output.

It answers ``llm`` tasks *extractively*: it picks the sentences of the input that best
match the task (by shared words and by how central their words are to the input) and
returns them in their original order. It never invents text. Same input, same output.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from xsky.plan import dependency_text
from xsky.plan.models import Workflow, WorkflowAgent

LABEL = "[offline provider]"
PROVIDER = "offline"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Lines that are structure, not prose: headings, list items with links, bare URLs, labels.
_NOT_PROSE = re.compile(r"^\s*(?:#|URL:|https?://|\S+\s*→)|→\s*\S+$")
_MIN_WORDS = 4
_ENDS_SENTENCE = re.compile(r"[.!?。！？:;]\s*$")
_STOP = frozenset(
    """a an and are as at be but by for from has have in into is it its of on or that the
    this to was were will with what which who how why when where do does did not no yes you
    your we our they their i me my he she his her them then than so such can could should
    would about over under after before all any each more most some one two three""".split()
)
_COUNT_WORDS = {"one": 1, "a": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _stem(word: str) -> str:
    # A crude stem: "durable", "durability" and "durably" meet at "durab".
    return word[:5] if len(word) > 5 else word


def _content_words(text: str) -> list[str]:
    return [_stem(w) for w in _words(text) if w not in _STOP and len(w) > 1]


def split_sentences(text: str) -> list[str]:
    """Sentences of prose; wrapped lines of one paragraph are joined first."""
    paragraphs = re.split(r"\n\s*\n", text)
    out: list[str] = []
    for para in paragraphs:
        lines = [ln for ln in para.splitlines() if ln.strip() and not _NOT_PROSE.search(ln)]
        list_like = any(re.match(r"\s*(?:[-*•]|\d+[.)])\s", ln) for ln in lines) or (
            # short lines without a full stop: menu items and link labels, not one sentence
            len(lines) > 1
            and all(len(ln.split()) < 8 and not _ENDS_SENTENCE.search(ln) for ln in lines)
        )
        chunks = lines if list_like else [" ".join(lines)]
        for chunk in chunks:
            out.extend(
                " ".join(p.split()) for p in re.split(r"(?<=[.!?。！？])\s+", chunk) if p.strip()
            )
    return out


def wanted_sentences(task: str) -> int:
    """How many sentences the task asks for ("in one sentence", "3 sentences"); default 3."""
    m = re.search(
        r"\b(\d+|one|a|single|two|three|four|five)\s+(?:short\s+)?(?:sentences?|lines?|points?|bullets?)\b",
        task,
        re.I,
    )
    if not m:
        return 3
    word = m.group(1).lower()
    return max(1, min(10, int(word) if word.isdigit() else _COUNT_WORDS[word]))


def answer(task: str, input_text: str | None) -> str:
    """An extractive answer to ``task`` from ``input_text``, starting with the offline label.
    Dependencies' results given as input are read without their labels and notes."""
    source = dependency_text.content(input_text or "").replace(LABEL, "").strip()
    if not source:
        return (
            f"{LABEL} No input to work from, and the offline provider does not invent answers. "
            f"Task: {' '.join(task.split())}. Configure a model (OPENAI_API_KEY / OPENAI_BASE_URL, "
            "XSKY_MODEL) for generative answers."
        )
    # Once each: a dependency that summarised another repeats its sentences.
    sentences = list(dict.fromkeys(split_sentences(source)))
    if not sentences:
        return f"{LABEL} {' '.join(source.split())[:2000]}"
    n = wanted_sentences(task)
    if len(sentences) <= n:
        return f"{LABEL} " + " ".join(sentences)
    # Choosing among many: fragments (headings, labels) make poor answers.
    sentences = [x for x in sentences if len(x.split()) >= _MIN_WORDS] or sentences

    freq = Counter(_content_words(source))
    task_words = set(_content_words(task))
    scored = []
    for position, sentence in enumerate(sentences):
        words = _content_words(sentence)
        if not words:
            continue
        centrality = sum(freq[w] for w in set(words)) / math.sqrt(len(words))
        relevance = 3.0 * len(task_words.intersection(words))
        complete = 1.0 if _ENDS_SENTENCE.search(sentence) else 0.5  # fragments make poor answers
        scored.append((-(centrality + relevance) * complete, position, sentence))
    if not scored:
        return f"{LABEL} " + " ".join(sentences[:n])
    best = sorted(scored)[:n]  # ties broken by position: deterministic
    chosen = [s for _, _, s in sorted(best, key=lambda item: item[1])]
    return f"{LABEL} " + " ".join(chosen)


# -- planning by rules ----------------------------------------------------------------------

_NUMBERED = re.compile(r"(?:^|\s)(\d{1,2})[.)]\s+")
_ONLY_NUMBER = re.compile(r"(?:step\s+)?\d{1,2}[.)]?", re.I)
_THEN = re.compile(
    r"(?:[,;.]\s*|\s+)(?:and\s+)?(?:then|after that|afterwards|finally|next)\b[,:]?\s+", re.I
)
_PARALLEL = re.compile(
    r"\b(?:in parallel|at the same time|simultaneously|concurrently|independently|meanwhile)\b",
    re.I,
)
_GATHER = re.compile(
    r"\b(?:summar|combin|compar|merg|aggregat|collect|report|conclu|synthes|both|all of|together)\w*",
    re.I,
)
_URL = re.compile(r"https?://[^\s<>\"'`]+")
_BACKTICK = re.compile(r"`([^`]+)`")
_RUN_QUOTED = re.compile(r"\b(?:run|execute)\s+[\"']([^\"']+)[\"']", re.I)
_PATH = re.compile(
    r"(?<![\w/.:-])((?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)*\.(?:txt|md|json|csv|py|html|xml|ya?ml|log|js|ts|toml|ini|cfg))\b"
)
_WRITE = re.compile(r"\b(?:write|save|store|create|append|record|put)\b", re.I)
_LIST = re.compile(r"\b(?:list|ls)\b", re.I)
_APPEND = re.compile(r"\b(?:append|add)(?:s|ed|ing)?\b", re.I)
# What a write step says to write, word for word: quoted, or "the word/text/line X".
_LITERAL = re.compile(
    r"\b(?:write|save|store|put|append|record)\s+(?:the\s+(?:word|text|line|string)\s+)?"
    r"(?:\"([^\"]+)\"|'([^']+)'|“([^”]+)”|(?<=the word )(\S+)|(?<=the text )(\S+))",
    re.I,
)


def split_steps(text: str) -> tuple[list[str], bool]:
    """The steps of a request, and whether the request says they may run in parallel."""
    text = " ".join(text.split())
    numbered = list(_NUMBERED.finditer(text))
    if len(numbered) >= 2:
        preamble = text[: numbered[0].start()]
        steps = [
            text[m.end() : (numbered[i + 1].start() if i + 1 < len(numbered) else len(text))].strip(
                " .;,"
            )
            for i, m in enumerate(numbered)
        ]
        return [s for s in steps if s], bool(_PARALLEL.search(preamble) or _PARALLEL.search(text))
    phases = [p.strip(" .;,") for p in _THEN.split(text) if p.strip(" .;,")]
    if len(phases) == 1:
        sentences = [s.strip(" .;,") for s in re.split(r"(?<=[.!?])\s+", text) if s.strip(" .;,")]
        phases = sentences or phases
    # A step's number alone is no step: "1. Print hello" (one numbered step) split at its "1."
    # made an agent whose task was "1" (walk10)
    return [p for p in phases if not _ONLY_NUMBER.fullmatch(p)] or phases, False


def _parallel_parts(phase: str) -> list[str]:
    """'Fetch A and B in parallel' → ['Fetch A', 'Fetch B']."""
    body = _PARALLEL.sub("", phase).strip(" ,.")
    parts = [p.strip(" ,.") for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", body) if p.strip(" ,.")]
    if len(parts) < 2:
        return [phase]
    verb = parts[0].split()[0]
    return [
        p if i == 0 or not (_URL.match(p) or _PATH.match(p)) else f"{verb} {p}"
        for i, p in enumerate(parts)
    ]


def classify_step(step: str) -> tuple[str, dict[str, Any] | None]:
    """The agent kind for a step and, when it maps to one tool, that tool's config."""
    url = _URL.search(step)
    if url:
        return "browser", {"tool": "browser_navigate", "url": url.group(0).rstrip(".,;:)")}
    cmd = _BACKTICK.search(step) or _RUN_QUOTED.search(step)
    if cmd and _PATH.fullmatch(cmd.group(1)):  # "write 'hi' to `a.txt`": a file, not a command
        cmd = None
    if cmd:
        return "shell", {"tool": "shell", "command": cmd.group(1)}
    path = _PATH.search(step)
    if path:
        if _WRITE.search(step):
            # Only to the file the step writes *to*: "write a summary of notes.txt" names what
            # it reads (writing there overwrote the notes); its words are the model's answer.
            target = _destination(step)
            if target is None:
                return "llm", None
            config: dict[str, Any] = {"tool": "file_write", "path": target}
            if _APPEND.search(step):  # "append the line to log.txt": what is there stays
                config["append"] = True
            return "file", config
        if _LIST.search(step):
            return "file", {"tool": "file_list", "path": path.group(1)}
        return "file", {"tool": "file_read", "path": path.group(1)}
    if _LIST_FILES.search(step):
        # "list the files in the workspace", no path named (walk12: an llm agent with nothing
        # to read, which the offline provider fails at once)
        return "file", {"tool": "file_list", "path": "."}
    return "llm", None


_LIST_FILES = re.compile(
    r"^\W*(?:(?:please|then|and|now|first|next)\s+)*(?:list|ls)\b.*\b(?:files?|folders?|director(?:y|ies)|workspace)\b",
    re.I,
)


# Before a path, what makes it where a write goes: "to/into/as out.txt", "a file named x.md",
# or the write's own object ("create notes.md", "save the file report.csv").
_INTO = re.compile(
    r"(?:\b(?:to|into|as|at|named|called|onto)|\b(?:write|save|store|create|append|record|put))"
    r"\s+(?:(?:a|an|the|new)\s+)?(?:file\s+)?$",
    re.I,
)
# "in x.md": where a write goes after save/store/record/put ("save the summary in notes.md"),
# but after "write … of/from/about …" the file it names is what is read ("a summary of the
# errors in server.log").
_IN = re.compile(r"\bin\s+(?:(?:a|an|the|new)\s+)?(?:file\s+)?$", re.I)
_KEEPS = re.compile(r"\b(?:save|store|record|put)\b", re.I)
_SOURCE = re.compile(r"\b(?:of|from|about)\b", re.I)


def _destination(step: str) -> str | None:
    """The path a write step writes to, or None when every path it names is one it reads
    ("a summary of notes.txt", "the lines from data.csv")."""
    maybe = None
    for m in _PATH.finditer(step):
        before = step[: m.start()].rstrip("`'\"“ ")[-200:] + " "
        if _INTO.search(before):
            return m.group(1)  # "to x", "into x", "create x": surely where it goes
        if maybe is None and _IN.search(before):
            if _KEEPS.search(before) or not _SOURCE.search(before[-60:]):
                maybe = m.group(1)
    return maybe


def _refs(ids: list[str]) -> str:
    return "\n\n".join(f"{{{{agent_{i}_result}}}}" for i in ids)


def build_steps(
    steps: list[str], parallel: bool, start: int, base: list[str]
) -> list[WorkflowAgent]:
    """Agents for ``steps`` with ids from ``start``; the first ones depend on ``base``."""
    agents: list[WorkflowAgent] = []
    frontier: list[str] = list(base)  # what the next sequential step waits for
    gathered: list[str] = list(base)  # what parallel steps wait for
    expanded: list[tuple[str, bool]] = []
    for step in steps:
        if not parallel and _PARALLEL.search(step):
            expanded += [(p, True) for p in _parallel_parts(step)] + [("", False)]
        else:
            expanded.append((step, parallel))
    group: list[str] = []
    for step, in_parallel in expanded:
        if not step:  # end of an inline parallel group
            frontier, gathered, group = group, group, []
            continue
        agent_id = str(start + len(agents))
        if in_parallel and not _GATHER.search(step):
            depends = list(gathered)
            group.append(agent_id)
        else:
            depends = (group or frontier) if in_parallel else list(frontier)
            group = []
        kind, config = classify_step(step)
        # A gathering step in a chain sees every earlier step (all are its ancestors).
        gathering = kind == "llm" and _GATHER.search(step) and not in_parallel and agents
        sources = [a.id for a in agents] if gathering else depends
        inp = _refs(sources) or None
        if config and config.get("tool") == "file_write":
            said = _LITERAL.search(step)  # "write the word done into x.txt": that word, as said
            content = next(g for g in said.groups() if g is not None) if said else inp or ""
            config = {**config, "content": content}
            inp = None
        if config is not None:
            inp = None if kind != "llm" else inp
        agents.append(
            WorkflowAgent(
                id=agent_id,
                name=kind,
                task=step[:1].upper() + step[1:],
                input=inp,
                config=config,
                depends=depends,
            )
        )
        if not (in_parallel and not _GATHER.search(step)):
            frontier = gathered = [agent_id]
    return agents


def plan(task_prompt: str, task_id: str) -> Workflow:
    """A plan for a request, by rules: numbered steps, 'then', sentences; URLs, commands, paths."""
    steps, parallel = split_steps(task_prompt)
    if not steps:
        raise ValueError("the request is empty: say what should be done")
    agents = build_steps(steps, parallel, 1, [])
    name = " ".join(task_prompt.split())
    return Workflow(
        name=f"{LABEL} {name[:80]}", task_id=task_id, task_prompt=task_prompt, agents=agents
    )


def replan(current: Workflow, prompt: str | None) -> Workflow:
    """The offline replanner: the same plan (failed agents get another try), plus new steps."""
    if not prompt or not prompt.strip():
        return current.model_copy(update={"modified": True})
    numeric = [int(a.id) for a in current.agents if a.id.isdigit()]
    start = max(numeric, default=0) + 1
    depended = {d for a in current.agents for d in a.depends}
    leaves = [a.id for a in current.agents if a.id not in depended]
    steps, parallel = split_steps(prompt)
    added = build_steps(steps, parallel, start, leaves)
    return current.model_copy(update={"agents": current.agents + added, "modified": True})
