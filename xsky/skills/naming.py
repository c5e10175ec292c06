"""Skill names that describe the kind of task: a verb and an object (``fix-flaky-tests``).

A name is never made of a prompt's words as they come (``bad-idea-since``,
``don-notes-looks``), nor of ids (``task-notification-task-id-b7b23b2``) or stop-words
(``task``): offline, :func:`task_name` picks a *task verb* and a *software object* from
two closed vocabularies, so whatever a person typed, only those words can reach a name;
:func:`name_problems` holds a model's proposed name to the same shape.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from xsky.skills.atoms import STOPWORDS

# inflection → the verb a name starts with ("set up" is two words in a prompt, one in a name)
_VERB_GROUPS: dict[str, str] = {
    "fix": "fix fixes fixing fixed repair repairs repairing",
    "debug": "debug debugs debugging debugged",
    "add": "add adds adding added",
    "write": "write writes writing wrote draft drafts drafting",
    "update": "update updates updating updated",
    "refactor": "refactor refactors refactoring refactored restructure",
    "rename": "rename renames renaming renamed",
    "remove": "remove removes removing removed delete deletes deleting deleted drop",
    "migrate": "migrate migrates migrating migrated",
    "deploy": "deploy deploys deploying deployed ship ships shipping",
    "release": "release releases releasing released",
    "publish": "publish publishes publishing published",
    "review": "review reviews reviewing reviewed",
    "document": "document documents documenting documented",
    "configure": "configure configures configuring configured",
    "install": "install installs installing installed",
    "upgrade": "upgrade upgrades upgrading upgraded bump bumps bumping bumped",
    "optimize": "optimize optimizes optimizing optimized optimise speed",
    "profile": "profile profiles profiling profiled",
    "benchmark": "benchmark benchmarks benchmarking benchmarked",
    "implement": "implement implements implementing implemented",
    "build": "build builds building built",
    "create": "create creates creating created",
    "generate": "generate generates generating generated",
    "convert": "convert converts converting converted",
    "port": "port ports porting ported",
    "format": "format formats formatting formatted",
    "lint": "lint lints linting linted",
    "split": "split splits splitting",
    "merge": "merge merges merging merged",
    "rebase": "rebase rebases rebasing rebased",
    "revert": "revert reverts reverting reverted",
    "triage": "triage triages triaging triaged",
    "reproduce": "reproduce reproduces reproducing reproduced",
    "scaffold": "scaffold scaffolds scaffolding scaffolded",
    "summarize": "summarize summarizes summarizing summarized summarise",
    "analyze": "analyze analyzes analyzing analyzed analyse",
    "monitor": "monitor monitors monitoring monitored",
    "validate": "validate validates validating validated",
    "parse": "parse parses parsing parsed",
    "design": "design designs designing designed",
    "investigate": "investigate investigates investigating investigated diagnose diagnosing",
    "rotate": "rotate rotates rotating rotated",
    "restore": "restore restores restoring restored",
    "translate": "translate translates translating translated",
    "package": "package packages packaging packaged",
    "automate": "automate automates automating automated",
    "schedule": "schedule schedules scheduling scheduled",
    "audit": "audit audits auditing audited",
    "secure": "secure secures securing secured harden hardening",
    "test": "test tests testing tested",
    "shrink": "shrink shrinks shrinking",
    "set-up": "",  # "set up" / "setting up": matched as a pair below
    "clean-up": "",
}
VERB_OF: dict[str, str] = {
    form: verb for verb, forms in _VERB_GROUPS.items() for form in forms.split()
}
TASK_VERBS: frozenset[str] = frozenset(_VERB_GROUPS)
_PAIRS = {("set", "up"): "set-up", ("setting", "up"): "set-up", ("clean", "up"): "clean-up"}
_PAIRS |= {("cleaning", "up"): "clean-up", ("speed", "up"): "optimize"}

# the objects a name may end with, as they are written in it (plural for countable things)
OBJECTS: tuple[str, ...] = tuple(
    """
tests flaky-tests unit-tests integration-tests test-suite fixtures mocks release-notes changelog readme docs
documentation comments docstrings migrations schema indexes queries database tables columns api endpoints
routes cli commands commit-messages pull-requests branches merge-conflicts git-history ci pipelines workflows
github-actions docker-images dockerfiles containers kubernetes helm-charts manifests terraform infrastructure
dependencies packages lockfiles builds types type-errors lint-errors warnings imports logging logs metrics
traces alerts dashboards performance memory-leaks race-conditions deadlocks crashes bugs regressions errors
exceptions auth authentication login permissions config configuration environment secrets keys certificates
cache caching css styles layouts ui components forms pages translations scripts cron-jobs backups servers
services webhooks emails notifications versions releases data csv json yaml parsers reports benchmarks
models prompts agents skills plugins extensions hooks sessions tokens passwords users accounts payments
invoices orders search pagination uploads downloads images videos fonts icons themes accessibility
postgres mysql sqlite redis kafka graphql grpc rest websockets react vue django fastapi flask rails
pytest jest npm pip cargo go rust python typescript javascript node java gradle maven makefiles
""".split()
)
# objects that qualify the next one ("postgres migrations", "api endpoints", "react forms")
MODIFIERS: frozenset[str] = frozenset(
    """
postgres mysql sqlite redis kafka graphql grpc rest react vue django fastapi flask rails pytest jest npm pip
cargo go rust python typescript javascript node java gradle maven kubernetes terraform helm api ci database
docker git github unit integration
""".split()
)
_OBJECT_STEMS: dict[tuple[str, ...], str] = {}
# a name word that says nothing of a kind of task (the examples, and prompt filler)
FILLER: frozenset[str] = frozenset(
    """
task tasks notification notifications id ids todo stuff thing things something anything idea ideas since
don dont doesn didn isn wasn looks look seems bad good nice great okay ok yes no maybe please thanks hello hi
hey problem issue question help request user agent claude codex model summary summaries context continue
""".split()
) | STOPWORDS - TASK_VERBS - set(OBJECTS)
_NEGATIONS = frozenset("don't dont do-not never not no without avoid stop doesn't didn't".split())
_WORD = re.compile(r"[a-z][a-z0-9']*")
_IDLIKE = re.compile(r"^(?=.*\d)[a-z0-9]{5,}$|^\d{3,}$|^[0-9a-f]{7,}$")


def _stem(word: str) -> str:
    """A crude plural strip, enough to match "test"/"tests", "index"/"indexes", "query"/"queries"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("xes", "ches", "shes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


for _obj in OBJECTS:
    _OBJECT_STEMS[tuple(_stem(w) for w in _obj.split("-"))] = _obj


# A file, a path or an identifier as written (test_orders.py, src/api/cart.ts, getUserById()):
# the task's subject, never its kind — its pieces would make names like "test-orders".
_NAMED_THING = re.compile(r"\S*(?:[/\\_]|\.[A-Za-z0-9]{1,5}\b|\(\))\S*")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(_NAMED_THING.sub(" ", text.replace("’", "'")).lower())


def _objects_at(tokens: list[str], i: int) -> tuple[str, int] | None:
    """The longest vocabulary object starting at token ``i``: (its name form, tokens used)."""
    for size in (3, 2, 1):
        key = tuple(_stem(t) for t in tokens[i : i + size])
        if len(key) == size and key in _OBJECT_STEMS:
            return _OBJECT_STEMS[key], size
    return None


def _verbs(tokens: list[str]) -> list[tuple[int, str]]:
    """(position, verb) of every task verb not negated ("don't produce code" is no task)."""
    found = []
    for i, tok in enumerate(tokens):
        verb = _PAIRS.get((tok, tokens[i + 1])) if i + 1 < len(tokens) else None
        verb = verb or VERB_OF.get(tok)
        if verb is None:
            continue
        before = tokens[max(0, i - 2) : i]
        if any(b in _NEGATIONS for b in before) or " ".join(before).endswith("do not"):
            continue
        found.append((i, verb))
    return found


def name_of(text: str) -> str | None:
    """``verb-object`` for one task description, or None when it names no kind of task we know.

    The verb is the first task verb (not negated) that an object follows within six words.
    A run of objects names its last (``payment tests`` → ``tests``) unless the first
    qualifies it (``postgres migrations``); a word before it may make a known object
    (``flaky payment tests`` → ``flaky-tests``).
    """
    tokens = _tokens(text)
    for pos, verb in _verbs(tokens):
        start = pos + (2 if "-" in verb and verb != "optimize" else 1)
        for i in range(start, min(len(tokens), start + 6)):
            hit = _objects_at(tokens, i)
            if hit is None:
                continue
            obj, used = hit
            j = i + used
            while (nxt := _objects_at(tokens, j)) is not None and j < start + 8:
                if obj in MODIFIERS and nxt[0] not in MODIFIERS:
                    obj = f"{obj}-{nxt[0]}"
                    break
                obj, j = nxt[0], j + nxt[1]
            for word in tokens[start:j]:
                if f"{word}-{obj}" in OBJECTS:
                    obj = f"{word}-{obj}"
                    break
            if obj == verb or obj.split("-")[0] == verb:
                continue  # "test the tests" names nothing
            return f"{verb}-{obj}"
    return None


def task_name(texts: Iterable[str], taken: Iterable[str] = ()) -> str | None:
    """The name most of these task descriptions agree on (a skill's founders vote), unused.

    Ties go to the name seen first. None when no description names a kind of task: offline,
    such atoms wait rather than found a skill with a name made of their words.
    """
    names = [n for n in (name_of(t) for t in texts) if n]
    if not names:
        return None
    counts = Counter(names)
    best = max(names, key=lambda n: (counts[n], -names.index(n)))
    used = set(taken)
    if best not in used:
        return best
    for n in range(2, 100):
        if f"{best}-{n}" not in used:
            return f"{best}-{n}"
    return None


def name_problems(name: str) -> list[str]:
    """What keeps ``name`` from describing a kind of task; empty when it does."""
    parts = name.split("-")
    found = []
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", name) or len(name) > 64:
        return ["a name is 1-64 characters of a-z, 0-9 and single hyphens inside"]
    verb = "-".join(parts[:2]) if "-".join(parts[:2]) in TASK_VERBS else parts[0]
    rest = parts[len(verb.split("-")) :]
    if verb not in TASK_VERBS:
        found.append(
            "a name starts with the task's verb (fix, write, deploy, migrate, …), e.g. fix-flaky-tests"
        )
    if not rest:
        found.append("a name is a verb and what it acts on, e.g. write-release-notes")
    if len(parts) > 5:
        found.append("a name has at most five words: the kind of task, not this one instance")
    if any(p in FILLER for p in rest):
        found.append("a name holds no filler or stop-words (task, notification, since, idea, …)")
    if any(_IDLIKE.match(p) for p in parts):
        found.append("a name holds no ids, hashes or numbers")
    return found
