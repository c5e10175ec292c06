"""What a person's prompt is to the task in progress: a new goal, or more of the same task.

An atom is a *task*, not a turn: follow-ups, critiques and refinements of an iterative
dialogue ("it's good, but…", "don't produce code, design the solution first", "not
acceptable, revise", "no, use X", "also …", "what else?") stay in the task they refine, and
the critiques say how it went (they lower its UX score). Only a prompt that names a new
goal starts a new atom. The adapters tell who wrote a user record (``Unit.origin``); for
views rendered before they did (origin None) the same is read from the text.
"""

from __future__ import annotations

import re
from typing import Literal

from xsky.skills.atoms import ACKNOWLEDGEMENT, CONTINUE, CORRECTION, containment, keywords
from xsky.skills.trajectory import HEAD_CHARS

Follow = Literal[
    "machine",  # machine text that reached a user record (older views): never intent
    "answer",  # an approval or menu answer: stays with the turn that asked
    "correction",  # a critique or correction of what was just done: stays, lowers the UX
    "refinement",  # "also …", "what else?": more of the same task, lowers the UX a little
    "acknowledgement",  # "thanks, looks good": stays
    "continue",  # "go on": stays
    "reask",  # the same ask again: stays
    "same",  # a follow-up about the same thing: stays
    "new",  # names a new goal: a new atom
]

# Machine input that older adapters rendered as a user prompt.
MACHINE = re.compile(
    r"(?is)^\s*(<task-notification>|<task-id>|<system-reminder>|<user-prompt-submit-hook>|"
    r"<command-(name|message|args)>|<local-command-std|<bash-(input|stdout|stderr)>|"
    r"caveat: the messages below were generated|your task is to create a detailed summary|"
    r"this session is being continued from a previous conversation|"
    r"(pre|post)tooluse:|stop hook feedback|\[request interrupted)"
)
# A compaction summary that arrived as a user record: it opens a compaction like a marker.
COMPACTION_TEXT = re.compile(
    r"(?is)^\s*(this session is being continued from a previous conversation|"
    r"your task is to create a detailed summary)"
)
# Menu picks and approvals: "1", "p", "y", "yes, 2", "option b".
MENU = re.compile(r"(?i)^\s*(\d{1,2}|[a-z]|y|n|yes|no|ok|option \w|\w\)|\(\w\))\s*[.!]?\s*$")
# Critiques of what was just done (beyond the plain "no, …" of CORRECTION).
CRITIQUE = re.compile(
    r"(?i)^\s*("
    r"(it|this|that)('?s| is| looks| seems)\s+(good|fine|ok|okay|nice|better|close|great|almost)\b[^.\n]{0,30}\bbut\b|"
    r"(good|nice|great|ok|okay|fine|better|close|almost)\b[^.\n]{0,20}\bbut\b|"
    r"(but|however|hmm+|meh|nah|ugh)\b|"
    r"(don'?t|do not|dont|never|please don'?t|stop)\b|"
    r"(not|isn'?t|is not|this isn'?t)\s+(acceptable|good|right|quite|correct|enough|it|what)\b|"
    r"(revise|redo|rewrite|rework|simplify|shorter|longer|too (long|short|complex|verbose|much))\b|"
    r"why\b[^\n]{0,120}\?|are you sure\b|really\?|is that (right|true|correct)\b|"
    r"(it|this|that)('?s| is)\s+(too|not|wrong|still|way|overly|a bit|broken|odd|weird)\b|"
    r"(rather|prefer|i'?d prefer|better to|i said|as i said|i asked|you should|you need to)\b|"
    # a hedged suggestion about what was done: "maybe goal_amount should be cast to float …"
    r"(maybe|perhaps|probably|i think|i guess|i believe|i feel)\b[^\n]{0,120}?"
    r"\b(should(n'?t)?|needs? to|has to|have to|must|ought to|would be better)\b"
    r")"
)
# Steering words that only refine when the prompt is short ("use pnpm", "make it async").
STEER = re.compile(
    r"(?i)^\s*(make it|keep it|change it|rename it|move it|use|try|what about|how about|instead)\b"
)
STEER_CHARS = 160
CRITIQUE_ANYWHERE = re.compile(
    r"(?i)\b(not acceptable|unacceptable|that'?s wrong|this is wrong|you broke|you forgot|"
    r"still (fails|failing|broken|wrong|not)|doesn'?t (work|compile|build)|not what i (asked|wanted|meant)|"
    r"that'?s (odd|weird|strange|not right))\b"
)
REFINEMENT = re.compile(
    # a prompt that opens with "and" goes on with the one before it ("and keep the upper() call")
    r"(?i)^\s*(also\b|(oh,? )?and\b|plus\b|one more\b|what else|anything else|"
    r"more\b|same (for|with)\b|and\b[^.\n]{0,40}\?\s*$|add (also|too)\b)"
)
# Words that say a new goal begins, whatever the topic overlap.
NEW_GOAL = re.compile(
    r"(?i)^\s*(new task\b|next task\b|next,|next:|unrelated\b|different (question|topic|task)\b|"
    r"separate(ly)? (question|task)?\b|moving on\b|let'?s move on\b|switching to\b|"
    r"another (thing|task|question)\b|now something\b|on another note\b)"
)
# "continue to phase 2: start with the models", "move on to the API": going on *to* something
# named — a new goal when what it names is not the task at hand ("continue" alone goes on).
# "continue with phase 3" goes on *with* what is in hand (only "with the next …" moves on).
ONWARD = re.compile(
    r"(?i)^\s*(?:continue|proceed|go on|move on|moving on|carry on)\s+"
    r"(?:to|onto|on to|with (?:the )?next)\s+(.+)",
    re.S,
)
# A thank-you or a verdict before more words ("great! \ncontinue with phase 3 …"): what
# follows says what the prompt is.
ACK_PREFIX = re.compile(
    r"(?i)^\s*(?:(?:thanks|thank you|thx|perfect|great|awesome|nice|lgtm|looks good|cool|"
    r"excellent|works now)\s*[!.,]+\s*|"
    # "ok good now when i deposit …", "okay that works, now …": an "ok" and a verdict on what
    # was done, closed by a stop or a "now", then more ("yes good idea" is no verdict)
    r"(?:ok(?:ay)?|yes|yep|alright)[\s,!.]+(?:(?:that'?s|it'?s|that|it|looks|very|all)\s+)?"
    r"(?:good|great|nice|perfect|cool|fine|done|works?(?: now)?)(?:\s*[,!.]+|\s+(?=now\b))"
    r"\s*(?:now\b[\s,]*)?)"
    r"(?=\S)"
)
# A reply that names no goal of its own: few words the task does not hold. Once the agent
# has answered, "I can see it in incognito", "it should be visible to everyone", "so what
# is still missing?" go on with the task; a new goal names what it is about.
FEW_NEW = 1  # new words of a reply that points at nothing
FEW_NEW_POINTING = 2  # … of one that points back ("it", "that") or goes on ("so …")
REPLY_CHARS = 200
POINTS_BACK = re.compile(
    r"(?i)^\s*(?:so|then|hmm+|well|ok(?:ay)?|right|still)\b|\b(?:it|them|the same)\b|"
    # "that" and "this" as pronouns, not as a determiner ("all of this chat")
    r"\b(?:that|this|these|those)\b(?=\s*(?:[.,;:!?]|$|is\b|was\b|'s\b|one\b))"
)
# A slash command the person ran (``/review-pr 42``, ``/fix-issue 123``): a task of its own;
# also typed as the CLI call a guide gives for a terminal (``claude "/competitive-landscape …"``),
# which the model answers by running the skill it names.
SLASH_COMMAND = re.compile(r"^(?:claude\s+[\"'])?/[A-Za-z][\w:.-]*(\s|$)")
# A request that names its own goal: an imperative verb (or a polite form of one) first.
REQUEST = re.compile(
    r"(?i)^\s*(now\s+|ok(ay)?[,.]?\s+|great[,.!]?\s+|thanks[,.!]?\s+|next[,:]?\s+)?"
    r"(please\s+|can you\s+|could you\s+|would you\s+|let'?s\s+|i (want|need|would like) (you )?to\s+|"
    r"help me\s+)?"
    r"(add|write|create|implement|build|explain|refactor|migrate|set up|setup|generate|update|"
    r"fix|remove|delete|rename|convert|review|investigate|debug|find|show|document|deploy|"
    r"configure|install|summari[sz]e|optimi[sz]e|port|design|draft|plan|profile|benchmark|"
    r"upgrade|bump|split|merge|extract|translate|test|check|audit|clean up|speed up|look into|"
    r"figure out|compare|list|describe|analy[sz]e|draw|scaffold|wire up|hook up|make|explore|"
    r"research|tackle|work on|start on|prepare|publish|release|rewrite)\b"
)
# A Chinese request's opening ("請…" please, "幫我…" help me, "可以幫…" can you help …): its
# run of Han characters is one keyword, so without it a request reads as a short reply.
REQUEST_HAN = re.compile(
    r"^\s*(?:請|请|麻煩|麻烦|幫我|帮我|幫忙|帮忙|能不能|能否|可不可以|可以幫|可以帮|你可以|"
    r"我想要|我需要|我要|給我|给我)"
)
REQUEST_VERBS = frozenset(
    "add write create implement build explain refactor migrate setup generate update fix remove "
    "delete rename convert review investigate debug find show document deploy configure install "
    "summarise summarize optimise optimize port design draft plan profile benchmark upgrade bump "
    "split merge extract translate test check audit list describe analyse analyze draw scaffold "
    "make please can could would help explore research tackle work start prepare publish "
    "release rewrite".split()
)
# A statement about what was just done, by its relation to it rather than its opening word:
# a subject that points back (or the person, or "we") and, in the same first clause, a
# negation or a verdict ("it's bad idea, since…", "ir's not jsonl file…", "we don't control
# claude code process…", "the tests still fail"). Typos in the pronoun ("ir's") are common.
STATEMENT_SUBJECT = re.compile(
    r"(?i)^\s*(?:it|ir|its|this|that|these|those|they|there|we|you|i|"
    r"the (?:output|result|answer|file|code|tests?|change|diff|plan|script|command|page|build|"
    r"function|query|error|fix|approach|design|format))(?:'s|'re|'m|'ll|'ve)?\b"
)
VERDICT = re.compile(
    r"(?i)\b(?:not|no|never|nothing|\w+n't|cannot|bad|wrong|broken|incorrect|missing|useless|"
    r"pointless|unnecessary|overkill|too|still|worse|fail(?:s|ed|ing)?|ugly|confusing|off|"
    r"misleading|outdated|invalid|empty|only)\b"
)
CLAUSE = re.compile(r"[,.;:!?\n]|\b(?:since|because|so|but|and)\b")
# Pointing at the last output: "your answer", "what you wrote", "the output above".
BACK_POINTER = re.compile(
    r"(?i)\b(?:what you (?:wrote|did|said|made|changed|suggested|proposed)|"
    r"your (?:answer|output|change|changes|code|plan|fix|version|suggestion|approach|summary|draft)|"
    r"the (?:output|result) above|above\b|previous (?:one|version|answer|attempt)|"
    r"last (?:one|change|answer|attempt))"
)
BACK_POINTER_CHARS = 300
# An item of the agent's answer named by its number ("isn't number 4 already covered by pyth?",
# "ditch number 5 and 6 … dive deep into 1-4", "go with option 2"): the prompt is about the
# result, not a goal of its own, once the agent has answered (real13). Not a step or a phase of
# a plan (going on to one names its goal: real8), nor an issue's number ("#42").
ITEM_POINTER = re.compile(
    r"(?i)\b(?:number|no\.|item|point|option|idea|suggestion|gap|bullet|choice|alternative)"
    r"\s*\d{1,2}\b"
)


def is_statement_about_it(text: str) -> bool:
    """A short statement whose subject points back and whose first clause negates or judges."""
    subject = STATEMENT_SUBJECT.match(text) if len(text) < 600 else None
    if subject is None:
        return False
    first = CLAUSE.split(text[subject.end() :], maxsplit=1)[0]
    return bool(VERDICT.search(first))


# A question about what was just done points back at it ("does it lock the table?"), or asks
# the agent whether it did something ("did you push?", "have you run the tests?").
ASKS_WHAT_WAS_DONE = re.compile(r"(?i)^\s*(?:did|have|has|had|were|was)\s+(?:you|we|it)\b")
BACK_REFERENCE = re.compile(r"(?i)\b(it|that|this|these|those|them|there|the same)\b")
SAME_TOPIC = 0.34  # share of a prompt's keywords already in the task: a follow-up on it


# A Korean word's particle or request ending ("결과를" the result + object marker, "분석해줘"
# analyse + "please"): its stem is the word without it.
_HANGUL_ENDINGS = (
    "해주세요", "해줘요", "해줘", "하기", "에서", "으로", "까지", "부터",
    "을", "를", "이", "가", "은", "는", "에", "로", "와", "과", "도", "의",
)  # fmt: skip


def stem(word: str) -> str:
    """A crude stem, so "locking" and "lock", "tests" and "test" are one word of a topic."""
    if "\uac00" <= word[:1] <= "\ud7a3":
        for ending in _HANGUL_ENDINGS:
            if len(word) > len(ending) and word.endswith(ending):
                return word[: -len(ending)]
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


_PARTS = re.compile(r"[-_:/.]+")


def known_stems(task_words: list[str]) -> set[str]:
    """The stems a task's words name, a compound's parts among them: the task of
    ``/handgemacht:create-beads …`` or ``fix the user-profile page`` knows "beads" and
    "profile", so "create the beads" after it names no new object."""
    known = {stem(w) for w in task_words}
    for w in task_words:
        known.update(stem(p) for p in _PARTS.split(w) if len(p) > 2)
    return known


# Lines a prompt repeats from the prompt before it, this many characters of them or more: a
# preamble the person pastes before each request (rules, a project brief, a spec's frame).
PREAMBLE_CHARS = 100


_WORDLESS = re.compile(r"\W*")


def _line_key(line: str) -> str:
    """A line as compared with the prompt before (rules of dashes and the like: none)."""
    key = " ".join(line.split()).lower()
    return "" if _WORDLESS.fullmatch(key.replace("_", "")) else key


def own_part(text: str, before: str | None) -> str:
    """What a prompt asks beyond the lines it repeats from the prompt ``before`` it, cut to
    the head the rules read (:data:`HEAD_CHARS`): two requests behind one long pasted
    preamble differ only after it. A prompt that repeats little, or only repeats (the same
    ask again), is read as it is."""
    if before:
        seen = {k for line in before.splitlines() if (k := _line_key(line))}
        own, repeated = [], 0
        for line in text.splitlines():
            key = _line_key(line)
            if key and key in seen:
                repeated += len(key)
            elif key:
                own.append(line.strip())
            seen.discard(key)  # a line counts once
        if repeated >= PREAMBLE_CHARS and own:
            text = "\n".join(own)
    return text.strip()[:HEAD_CHARS]


def is_machine(head: str) -> bool:
    return bool(MACHINE.match(head))


def classify(
    head: str,
    origin: str | None,
    task_words: list[str],
    completed: bool,
    interrupted: bool,
) -> Follow:
    """How a user unit relates to the task whose prompts' keywords are ``task_words``."""
    text = head.strip().replace("’", "'").replace("‘", "'")
    if origin is None and is_machine(text):
        return "machine"
    if origin == "answer":
        return "answer"
    # A command or a new goal says itself what it is, also right after the person said no
    # to a tool call (they stopped that task to run another).
    if NEW_GOAL.match(text) or SLASH_COMMAND.match(text):
        return "new"
    if origin == "correction":
        return "correction"
    if MENU.match(text):
        return "answer"
    short = len(text) < 600
    critique = short and bool(
        CORRECTION.match(text)
        or CRITIQUE.match(text)
        or CRITIQUE_ANYWHERE.search(text)
        or is_statement_about_it(text)
        or (len(text) < BACK_POINTER_CHARS and BACK_POINTER.search(text))
    )
    if origin == "after_interrupt":
        ack = ACK_PREFIX.match(text)
        if ack and text[ack.end() :].strip():
            # "ok good now when i deposit …": what was done is accepted (the person stopped a
            # step that ran on — a dev server — not the task): the rest says what comes next
            return classify(text[ack.end() :], "prompt", task_words, True, interrupted)
        return _after_interrupt(text, task_words, critique)
    if critique:
        return "correction"
    if len(text) < STEER_CHARS and STEER.match(text):
        return "correction"
    if ACKNOWLEDGEMENT.match(text):
        return "acknowledgement"
    if origin != "after_interrupt" and ACK_PREFIX.match(text):  # "great! continue with …"
        rest = text
        while ack := ACK_PREFIX.match(rest):
            rest = rest[ack.end() :]
        return classify(rest, origin, task_words, completed, interrupted)  # what follows
    if CONTINUE.match(text) and len(text) < 300:
        onward = ONWARD.match(text) if completed else None
        if onward is None or not _names_new_goal(onward.group(1), task_words):
            return "continue"
        return "new"
    if short and REFINEMENT.match(text):
        return "refinement"
    if completed and short and ITEM_POINTER.search(text):
        return "same" if "?" in text else "refinement"  # a question about it, or a steer
    words = keywords(text)
    if interrupted and containment(words, task_words) >= 0.5:
        return "reask"
    if containment(words, task_words) >= 0.75:
        return "reask"
    if not words:
        return "same"  # names nothing of its own ("do that", "why?")
    known = known_stems(task_words)
    shared = sum(1 for w in words if stem(w) in known) / len(words)
    if REQUEST.match(text) or REQUEST_HAN.match(text):
        objects = [stem(w) for w in words if w not in REQUEST_VERBS]
        if all(w in known for w in objects):
            return "same"  # "implement it", "build that design": the object is the task at hand
        # After the agent answered, a request with its own verb and object is a new goal;
        # while it works, only one about something else is (the rest steers the task).
        return "new" if completed or shared < SAME_TOPIC else "same"
    if text.endswith("?") and (BACK_REFERENCE.search(text) or ASKS_WHAT_WAS_DONE.match(text)):
        return "same"  # "does it lock the table?": a question about the result
    # While the agent still works, a prompt is more likely to steer than to start over.
    if shared >= (SAME_TOPIC if completed else SAME_TOPIC / 2):
        return "same"
    if len(text) < REPLY_CHARS:  # no request, no new-goal word: a reply, unless it names more
        fresh = sum(1 for w in words if stem(w) not in known)
        if fresh <= (FEW_NEW_POINTING if POINTS_BACK.search(text) else FEW_NEW):
            return "same"
    return "new"


def _names_new_goal(rest: str, task_words: list[str]) -> bool:
    """Whether what a "continue to …" goes on to names objects the task does not hold."""
    objects = [stem(w) for w in keywords(rest) if w not in REQUEST_VERBS]
    if not objects:  # "proceed to implement it": the task at hand, going on
        return False
    known = known_stems(task_words)
    return sum(1 for w in objects if w in known) / len(objects) < SAME_TOPIC


def _after_interrupt(text: str, task_words: list[str], critique: bool) -> Follow:
    """The person stopped the agent and typed at once: a refinement of the task ("no, keep the
    flags", "use the canary target") unless the words name a goal of their own — a request
    whose objects the task never mentioned ("explore more of current repo")."""
    if critique or not REQUEST.match(text):
        return "correction"
    words = keywords(text)
    if containment(words, task_words) >= 0.5:
        return "correction"  # the task said again, with more: "add a Dockerfile … but do NOT …"
    known = known_stems(task_words)
    objects = [stem(w) for w in words if w not in REQUEST_VERBS]
    shared = sum(1 for w in objects if w in known) / len(objects) if objects else 1.0
    return "new" if shared < SAME_TOPIC else "correction"


STAYS: frozenset[str] = frozenset(
    {
        "machine",
        "answer",
        "correction",
        "refinement",
        "acknowledgement",
        "continue",
        "reask",
        "same",
    }
)
