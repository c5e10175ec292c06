"""The offline provider: deterministic answers with no model, labelled in every output.

It answers ``llm`` tasks *extractively*: it picks the sentences of the input that best
match the task (by shared words and by how central their words are to the input) and
returns them in their original order. It never invents text. Same input, same output.
"""

from __future__ import annotations

import math
import re
from collections import Counter

LABEL = "[offline provider]"
PROVIDER = "offline"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Lines that are structure, not prose: headings, list items with links, bare URLs, labels.
_NOT_PROSE = re.compile(r"^\s*(?:#|URL:|https?://|\S+\s*→)|→\s*\S+$")
_MIN_WORDS = 4
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
        list_like = any(re.match(r"\s*(?:[-*•]|\d+[.)])\s", ln) for ln in lines)
        chunks = lines if list_like else [" ".join(lines)]
        for chunk in chunks:
            out.extend(" ".join(p.split()) for p in re.split(r"(?<=[.!?。！？])\s+", chunk) if p.strip())
    return out


def wanted_sentences(task: str) -> int:
    """How many sentences the task asks for ("in one sentence", "3 sentences"); default 3."""
    m = re.search(r"\b(\d+|one|a|single|two|three|four|five)\s+(?:short\s+)?(?:sentences?|lines?|points?|bullets?)\b", task, re.I)
    if not m:
        return 3
    word = m.group(1).lower()
    return max(1, min(10, int(word) if word.isdigit() else _COUNT_WORDS[word]))


def answer(task: str, input_text: str | None) -> str:
    """An extractive answer to ``task`` from ``input_text``, starting with the offline label."""
    source = (input_text or "").strip()
    if not source:
        return (
            f"{LABEL} No input to work from, and the offline provider does not invent answers. "
            f"Task: {' '.join(task.split())}. Configure a model (OPENAI_API_KEY / OPENAI_BASE_URL, "
            "XSKY_MODEL) for generative answers."
        )
    sentences = split_sentences(source)
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
        scored.append((-(centrality + relevance), position, sentence))
    if not scored:
        return f"{LABEL} " + " ".join(sentences[:n])
    best = sorted(scored)[:n]  # ties broken by position: deterministic
    chosen = [s for _, _, s in sorted(best, key=lambda item: item[1])]
    return f"{LABEL} " + " ".join(chosen)
