"""Benchmark: transcript ingestion (MB/s) and the cost of a skills tick when nothing changed.

Generates a seeded corpus of Claude Code sessions and Codex rollouts (multi-turn, tool
calls and results, large outputs, errors, thinking, compactions, subagents, Skill use and
SKILL.md reads, planted credentials), ingests it the way the scan workflow does with the
offline TaskAgent (scan → render → split → commit until a scan finds nothing), then tops
the corpus up with small sessions to ≥ 10,000 files and times a scan with nothing changed.

    python bench/ingest.py [--mb 200] [--files 10000] [--workers N] [--dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.skills.pipeline import _split_offline
from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, scan
from xsky.skills.runs import DeltaInput, DeltaRef, ScanInput
from xsky.skills.sources import Source
from xsky.skills.transcripts.claude_code import munged_cwd

SCAN = ScanInput(limit=5000, settle_seconds=0)
MARK, MARK_UP = (
    "Qz7xK",
    "QZ7XK",
)  # inside every planted secret: a leak is a marker left in a view or atom
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
HEX = "0123456789abcdef"

# -- text pools --------------------------------------------------------------------------------

WORDS = """
account address adapter admin alert allocator amount analytics api archive artifact asset audit auth backend
backoff balance batch billing blob bucket buffer build bundle cache callback cart catalog channel checkout chunk
client cluster codec column commit config connection consumer container context controller cookie coupon cursor
customer dashboard database dataset deadline decoder deploy diff digest discount dispatch document domain driver
email encoder endpoint entity error event export feature fetch field filter fixture flag form frame gateway graph
handler hash header health history hook image import index inventory invoice job journal kernel key label layout
ledger limit listener loader locale lock log mailer manifest mapper message metric middleware migration model
module monitor mutex namespace node notification offset order owner package page parser partition patch payload
payment permission pipeline plugin policy pool port price probe process profile project provider proxy publisher
query queue quota rate reader record refund region registry release renderer replica report repository request
resolver resource response result retry revision role route router rule runner sample scheduler schema scope
search secretary segment selector sequence serializer server service session settings shard shipment signal sink
slot snapshot socket source span spec stage state status storage store stream subscriber summary supplier
table tag task template tenant tenant test thread ticket timeout timer token topic trace tracker transaction
transform tree trigger upload user validator value vendor version view visitor volume warehouse webhook widget
worker workflow writer zone""".split()
VERBS = """add build cache check clean compute convert create decode delete deploy detect diff emit encode ensure
export fetch filter find flush format handle index load lock log map merge migrate normalize parse patch poll
publish push read record refresh register reload remove render replay reset resolve retry route run sanitize
save schedule scan send serialize sort split start stop store sync track transform trim update upload validate
verify wait watch write""".split()
ADJ = """async atomic broken cached cold concurrent corrupt dirty duplicate empty expired flaky frozen global hot
idle invalid lazy legacy local missing nested null partial pending private public racy readonly remote stale
strict sync temporary unicode unsorted unused""".split()
LANGS = [
    ("py", "python"),
    ("ts", "typescript"),
    ("go", "go"),
    ("rs", "rust"),
    ("sql", "sql"),
    ("js", "javascript"),
]
PKGS = [
    "fastapi",
    "pydantic",
    "sqlalchemy",
    "django",
    "celery",
    "redis",
    "httpx",
    "pytest",
    "numpy",
    "pandas",
    "react",
    "next",
    "vite",
    "eslint",
    "prisma",
    "express",
    "tokio",
    "serde",
    "axum",
    "gin",
    "cobra",
    "boto3",
    "alembic",
]
PROJECTS = [
    "shopapp",
    "blog",
    "learn",
    "billing-api",
    "infra",
    "mobile-web",
    "data-pipeline",
    "auth-service",
    "search",
    "notifier",
    "admin-console",
    "cli-tools",
    "ml-serving",
    "docs-site",
    "payments",
    "inventory",
    "scheduler",
    "gateway",
    "analytics",
    "crm",
    "wiki",
    "chat-bot",
    "etl-jobs",
    "reporting",
    "warehouse-sync",
    "checkout-v2",
    "edge-proxy",
    "ledger",
    "onboarding",
    "feature-flags",
    "geo-service",
    "media-upload",
]
USERS = ["dev", "alice", "bob", "mkumar", "jli"]
SKILLS = [
    "pytest-runner",
    "pdf-extract",
    "sql-migrate",
    "query-explain",
    "release-notes",
    "docker-build",
    "api-client-gen",
    "changelog",
    "k8s-deploy",
    "perf-profile",
    "i18n-sync",
    "security-review",
]
CC_MODELS = ["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"]
CODEX_MODELS = ["gpt-5.1-codex", "gpt-5-codex", "gpt-5.1-codex-mini"]

PROMPTS = [
    "tests/test_{w}.py is failing on main ({f}). Can you fix it? Looks like the {w2} is off for some {w3}s.",
    "add a {w} endpoint to the {w2} service that returns the {w3}s of a {w4} as JSON, with pagination",
    "refactor {path} so that {f} no longer depends on {C}; keep the public API the same",
    "why is {f} so slow? the {w} page takes {n} seconds to load for customers with many {w2}s",
    "write a migration that adds an index on {w}s({w2}_id, created_at) - the {w3} history page is slow",
    "bump {pkg} to {ver} and fix whatever breaks",
    "explain what {path} does and where {f} is called from",
    "the {w} job crashes with `{E}: {adj} {w2}` in production, here's the trace from the logs, find the root cause",
    "rename {C} to {C2} everywhere, including the docs and the {w} fixtures",
    "add retries with exponential backoff to {f} - the {w} provider times out a few times a day",
    "write unit tests for {path}; cover the {adj} {w} case and the error paths",
    "can you make the {w} CLI print a table instead of raw JSON? columns: {w2}, {w3}, status",
    "set up a GitHub Actions workflow that runs lint, type checks and tests on every PR",
    "the Dockerfile builds a 1.9 GB image, make it smaller (multi-stage, slim base)",
    "convert {path} from callbacks to async/await",
    "we double-charge when the {w} webhook is retried. make the handler idempotent",
    "port the {w} module from {lang} to {lang2}, same behaviour, same tests",
    "review my last commit and tell me what could break in production",
]
FOLLOWUPS = [
    "no, use {w} instead of {w2}",
    "continue",
    "also update the docs",
    "that broke {f}, revert it and try again",
    "looks good, thanks. now run the full test suite",
    "can you also handle the {adj} {w} case?",
    "don't touch {path}, it's generated",
    "ok commit it with a good message",
    "wait, why did you change {f}?",
    "yes, go ahead",
    "keep going",
    "please add a test for that too",
]
SENTENCES = [
    "I'll start by reading {path} and reproducing the failure.",
    "The {C} {v}s the {w} before the {w2} is {adj}, so the {w3} can be {adj2}.",
    "{f} is called from {n} places; only the {w} handler relies on the {adj} behaviour.",
    "Running the tests again to confirm the fix.",
    "The root cause is a {adj} {w}: {f} reads it after the {w2} was already {v}ed.",
    "I'll {v} the {w} in {f} and add a regression test for the {adj} case.",
    "This keeps the public API of {C} unchanged; callers of {f} are not affected.",
    "All {n} tests pass now, including the new {w} test.",
    "Let me check how {w}s are {v}ed elsewhere before changing {path}.",
    "There is a {adj} {w} in the {w2} layer: the {w3} cache is never invalidated.",
    "The {w} uses {lang} {pkg} {ver}, which changed how {w2}s are {v}ed.",
    "I need to look at the {w2} schema first, the {w} column may be nullable.",
    "Per the {skill} skill, I'll {v} the {w} with the documented command.",
    "That error comes from {pkg}: the {w} argument was renamed in {ver}.",
    "Next I'll update {path} and the {w2} fixtures to match.",
]
CODE = [
    "def {f}({a}, {b}):",
    "    return {a}.{v}({b})",
    "    if not {a}:",
    '        raise ValueError("{adj} {w}: {{!r}}".format({b}))',
    "import {pkg}",
    "from {pkg}.{w} import {C}",
    "class {C}({C2}):",
    "    {a} = {b} + {n}",
    "    # {v} the {w} before the {w2}",
    "",
    "    for {a} in {b}s:",
    "        {a}.{v}()",
    '@pytest.mark.parametrize("{a}", [{n}, {n2}])',
    "    {a}: {C} | None = None",
    "    async def {f}(self, {a}: {C}) -> {C2}:",
    "        await self.{w}.{v}({a})",
    '    logger.info("{v} %s {w}", {a})',
    '    return {{"{w}": {a}, "{w2}": {b}}}',
    "        except {E} as e:",
    "            raise {C}Error(str(e)) from e",
    "    assert {f}({a}) == {n}",
    "const {a} = await {w}.{v}({b});",
    "export function {f}({a}: {C}): {C2} {{",
    "  if ({a} == null) return {b};",
    "}}",
    "func ({a} *{C}) {F}(ctx context.Context) error {{",
    "\tif err != nil {{",
    '\t\treturn fmt.Errorf("{v} {w}: %w", err)',
    "SELECT {w}_id, count(*) FROM {w2}s WHERE {w3} = $1 GROUP BY 1;",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {w}_{w2}_idx ON {w}s ({w2}_id, created_at);",
]
LOGS = [
    "tests/test_{w}.py::test_{f} PASSED                                     [ {n2}%]",
    "tests/test_{w}.py::test_{f} FAILED                                     [ {n2}%]",
    "{ts} INFO  [{w}.{w2}] {v}: {n} {w3}s in {n2}ms",
    "{ts} WARN  [{w}] {adj} {w2} for tenant {n}, retrying ({n2}/5)",
    "{ts} ERROR [{w}.{w2}] {E}: {adj} {w3} (request_id={hex})",
    '  File "/srv/{proj}/{path}", line {n}, in {f}',
    "    {a} = {b}.{v}({w})",
    "npm WARN deprecated {pkg}@{ver}: use {pkg2} instead",
    "{n} passed, {n2} warnings in {s}s",
    "Step {n2}/99 : RUN pip install --no-cache-dir -r requirements.txt",
    " ---> Running in {hex}",
    "{path}:{n}:{n2}: error TS2345: Argument of type '{C}' is not assignable to parameter of type '{C2}'.",
    "{path}:{n}: {adj} {w} (E{n2})",
    "   Compiling {pkg} v{ver}",
    "{hex} {v} {w} in {f} ({w2})",
]
ERRORS = [
    "KeyError",
    "TypeError",
    "ValueError",
    "TimeoutError",
    "ConnectionResetError",
    "IntegrityError",
    "AttributeError",
    "PermissionError",
    "AssertionError",
    "RuntimeError",
]


class Pools:
    """Pre-filled sentences, code lines and log lines, so a file is assembled by choosing, not formatting."""

    def __init__(self, rng: Random):
        self.rng = rng
        self.sentences = [self.fill(rng.choice(SENTENCES)) for _ in range(6000)]
        self.code = [self.fill(rng.choice(CODE)) for _ in range(8000)]
        self.logs = [self.fill(rng.choice(LOGS)) for _ in range(6000)]
        self.paths = [self.path() for _ in range(3000)]

    def path(self) -> str:
        r = self.rng
        ext = r.choice(LANGS)[0]
        return f"{r.choice(['src', 'app', 'lib', 'tests', 'pkg', 'internal', 'web'])}/{r.choice(WORDS)}/{r.choice(WORDS)}_{r.choice(WORDS)}.{ext}"

    def fill(self, template: str) -> str:
        r = self.rng
        w = lambda: r.choice(WORDS)  # noqa: E731
        cap = lambda: w().capitalize() + w().capitalize()  # noqa: E731
        return template.format(
            w=w(),
            w2=w(),
            w3=w(),
            w4=w(),
            v=r.choice(VERBS),
            adj=r.choice(ADJ),
            adj2=r.choice(ADJ),
            f=f"{r.choice(VERBS)}_{w()}",
            F=f"{r.choice(VERBS).capitalize()}{w().capitalize()}",
            C=cap(),
            C2=cap(),
            a=w(),
            b=w(),
            n=r.randint(1, 400),
            n2=r.randint(1, 99),
            s=f"{r.uniform(0.05, 90):.2f}",
            E=r.choice(ERRORS),
            pkg=r.choice(PKGS),
            pkg2=r.choice(PKGS),
            ver=f"{r.randint(0, 9)}.{r.randint(0, 40)}.{r.randint(0, 20)}",
            lang=r.choice(LANGS)[1],
            lang2=r.choice(LANGS)[1],
            skill=r.choice(SKILLS),
            proj=r.choice(PROJECTS),
            path=self.path() if "{path}" in template else "",
            ts=f"2026-0{r.randint(1, 9)}-1{r.randint(0, 9)}T0{r.randint(0, 9)}:{r.randint(10, 59)}:{r.randint(10, 59)}Z",
            hex="".join(r.choices(HEX, k=12)),
        )

    def prose(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(self.sentences, k=self.rng.randint(lo, hi)))

    def prompt(self, followup: bool = False) -> str:
        return self.fill(self.rng.choice(FOLLOWUPS if followup else PROMPTS))

    def lines(self, pool: list[str], n: int) -> list[str]:
        return self.rng.choices(pool, k=n)

    def big(self) -> int:
        """Lines in a tool output: mostly short, some long, a few huge."""
        x = self.rng.random()
        return (
            self.rng.randint(1, 25)
            if x < 0.6
            else self.rng.randint(25, 300)
            if x < 0.95
            else self.rng.randint(800, 4000)
        )


class Secrets:
    """Credentials planted in prompts and tool outputs; each holds a marker so a leak can be found."""

    def __init__(self, rng: Random):
        self.rng = rng
        self.planted: dict[str, str] = {}  # secret → kind

    def _body(self, n: int, chars: str = ALNUM, mark: str = MARK) -> str:
        body = "".join(self.rng.choices(chars, k=n))
        at = self.rng.randint(0, n)
        return body[:at] + mark + body[at:]

    def make(self, kind: str) -> str:
        r = self.rng
        value = {
            "openai-key": lambda: "sk-proj-" + self._body(44),
            "anthropic-key": lambda: "sk-ant-api03-" + self._body(80),
            "aws-access-key-id": lambda: "AKIA" + self._body(11, UPPER, MARK_UP),
            "github-token": lambda: "ghp_" + self._body(31),
            "slack-token": lambda: (
                f"xoxb-{r.randint(10**11, 10**12)}-{r.randint(10**12, 10**13)}-" + self._body(19)
            ),
            "stripe-key": lambda: "sk_live_" + self._body(60),
            "password": lambda: (
                r.choice(["S3cr3t", "hunter2", "Tr0ub4dor", "Passw0rd", "letmein"]) + self._body(8)
            ),
            "jwt": lambda: (
                "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ" + self._body(40) + "." + self._body(30)
            ),
        }[kind]()
        self.planted[value] = kind
        return value

    def env_block(self) -> str:
        """A .env / `env` dump: assignments, some secret."""
        r = self.rng
        lines = [
            f"APP_ENV={r.choice(['production', 'staging', 'dev'])}",
            f"PORT={r.choice([3000, 8000, 8080])}",
            f"DATABASE_URL=postgres://{r.choice(USERS)}:{self.make('password')}@db.internal:5432/{r.choice(WORDS)}",
            f"OPENAI_API_KEY={self.make('openai-key')}",
            f"AWS_ACCESS_KEY_ID={self.make('aws-access-key-id')}",
            f"LOG_LEVEL={r.choice(['info', 'debug'])}",
            "HOME=/home/dev",
            "LANG=C.UTF-8",
        ]
        extra = [
            lambda: f"ANTHROPIC_API_KEY={self.make('anthropic-key')}",
            lambda: f"GITHUB_TOKEN={self.make('github-token')}",
            lambda: f"SLACK_BOT_TOKEN={self.make('slack-token')}",
            lambda: f"STRIPE_SECRET_KEY={self.make('stripe-key')}",
            lambda: f"SESSION_SECRET={self.make('password')}",
            lambda: f"ADMIN_JWT={self.make('jwt')}",
        ]
        lines += [f() for f in r.sample(extra, r.randint(1, 3))]
        r.shuffle(lines)
        return "\n".join(lines)

    def inline(self) -> str:
        """One credential in a sentence, a command or a header."""
        r = self.rng
        return r.choice(
            [
                lambda: (
                    f'curl -H "Authorization: Bearer {self.make("jwt")}" https://api.internal/v1/{r.choice(WORDS)}s'
                ),
                lambda: f"export OPENAI_API_KEY={self.make('openai-key')}",
                lambda: f"psql postgres://admin:{self.make('password')}@db.internal:5432/app",
                lambda: f"the token is {self.make('github-token')}",
                lambda: f"DB_PASSWORD={self.make('password')} ./manage.py migrate",
            ]
        )()


# -- generators ------------------------------------------------------------------------------


def _uuid4(rng: Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _uuid7(rng: Random, at: datetime) -> str:
    ms = int(at.timestamp() * 1000)
    value = (
        (ms << 80) | (0x7 << 76) | (rng.getrandbits(12) << 64) | (0b10 << 62) | rng.getrandbits(62)
    )
    return str(uuid.UUID(int=value))


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _dump(rec: dict) -> str:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"


class Session:
    """One transcript being written: its lines, a clock, and the shared pools."""

    def __init__(self, gen: Generator, start: datetime):
        self.g, self.rng, self.p = gen, gen.rng, gen.pools
        self.t = start
        self.out: list[str] = []
        self.size = 0

    def tick(self, lo: float = 0.1, hi: float = 4.0) -> str:
        self.t += timedelta(seconds=self.rng.uniform(lo, hi))
        return _iso(self.t)

    def emit(self, rec: dict) -> None:
        line = _dump(rec)
        self.out.append(line)
        self.size += len(line)

    def tool_output(self, secret_chance: float) -> tuple[str, bool]:
        """(text, failed) of a command's output."""
        r, p = self.rng, self.p
        if r.random() < secret_chance:
            return self.g.secrets.env_block(), False
        text = "\n".join(p.lines(p.logs, p.big()))
        if r.random() < 0.12:
            return text + "\n" + "\n".join(
                p.lines(p.logs, r.randint(2, 12))
            ) + f"\n{r.choice(ERRORS)}: {p.prose(1, 1)}", True
        return text, False

    def file_text(self) -> str:
        return "\n".join(self.p.lines(self.p.code, self.p.big()))


class ClaudeSession(Session):
    def __init__(
        self, gen: Generator, start: datetime, cwd: str, session_id: str, agent: str | None = None
    ):
        super().__init__(gen, start)
        self.cwd, self.session_id, self.agent = cwd, session_id, agent
        self.model = self.rng.choice(CC_MODELS)
        self.version = self.rng.choice(["2.0.14", "2.0.31", "2.0.55", "2.1.3"])
        self.branch = self.rng.choice(["main", "main", "dev", f"fix/{self.rng.choice(WORDS)}"])
        self.parent: str | None = None
        self.subagents: list[ClaudeSession] = []

    def base(self, kind: str) -> dict:
        uid = _uuid4(self.rng)
        rec = {
            "parentUuid": self.parent,
            "isSidechain": self.agent is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.branch,
        }
        if self.agent:
            rec["agentId"] = self.agent
        rec["type"] = kind
        rec["uuid"] = uid
        self.parent = uid
        return rec

    def user(self, content: object, **extra: object) -> None:
        rec = self.base("user")
        rec["message"] = {"role": "user", "content": content}
        rec.update(extra)
        rec["timestamp"] = self.tick()
        self.emit(rec)

    def assistant(self, blocks: list[dict]) -> None:
        r = self.rng
        msg_id = "msg_01" + "".join(r.choices(ALNUM, k=22))
        req = "req_011C" + "".join(r.choices(ALNUM, k=18))
        usage = {
            "input_tokens": r.randint(2, 12),
            "cache_creation_input_tokens": r.randint(0, 8000),
            "cache_read_input_tokens": r.randint(0, 150000),
            "output_tokens": r.randint(5, 2000),
            "service_tier": "standard",
        }
        for i, block in enumerate(blocks):
            last = i == len(blocks) - 1
            rec = self.base("assistant")
            rec["message"] = {
                "model": self.model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": ("tool_use" if block["type"] == "tool_use" else "end_turn")
                if last
                else None,
                "stop_sequence": None,
                "usage": usage,
            }
            rec["requestId"] = req
            rec["timestamp"] = self.tick(0.2, 3)
            self.emit(rec)
            if r.random() < 0.02:  # Claude Code sometimes writes a line twice
                self.out.append(self.out[-1])
                self.size += len(self.out[-1])

    def tool(
        self,
        name: str,
        args: dict,
        result: object,
        is_error: bool = False,
        extra: dict | None = None,
    ) -> None:
        call_id = "toolu_01" + "".join(self.rng.choices(ALNUM, k=22))
        self.assistant([{"type": "tool_use", "id": call_id, "name": name, "input": args}])
        block = {"tool_use_id": call_id, "type": "tool_result", "content": result}
        if is_error:
            block["is_error"] = True
        self.user(
            [block],
            toolUseResult=extra
            if extra is not None
            else (result if isinstance(result, str) else {}),
        )

    def step(self, secret_chance: float) -> None:
        """One agent action: a tool call and its result."""
        r, p = self.rng, self.p
        x = r.random()
        path = f"{self.cwd}/{r.choice(p.paths)}"
        if x < 0.30:
            lines = self.file_text().split("\n")
            numbered = "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(lines, 1))
            self.tool(
                "Read",
                {"file_path": path},
                numbered,
                extra={
                    "type": "text",
                    "file": {
                        "filePath": path,
                        "content": "\n".join(lines),
                        "numLines": len(lines),
                        "startLine": 1,
                        "totalLines": len(lines),
                    },
                },
            )
        elif x < 0.60:
            command = r.choice(
                [
                    "pytest -q",
                    "npm test",
                    "go test ./...",
                    "cargo build",
                    "make lint",
                    "git status",
                    "cat .env",
                    "env | sort",
                    "docker build -t app .",
                    f"rg -n {r.choice(WORDS)} src",
                ]
            )
            out, failed = self.tool_output(secret_chance * (4 if "env" in command else 1))
            text = f"Exit code 1\n{out}" if failed else out
            self.tool(
                "Bash",
                {"command": command, "description": p.prose(1, 1)[:60]},
                text,
                is_error=failed,
                extra={"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
            )
        elif x < 0.75:
            old, new = (
                "\n".join(p.lines(p.code, r.randint(1, 12))),
                "\n".join(p.lines(p.code, r.randint(1, 20))),
            )
            if r.random() < 0.08:
                self.tool(
                    "Edit",
                    {"file_path": path, "old_string": old, "new_string": new},
                    "<tool_use_error>String to replace not found in file.</tool_use_error>",
                    is_error=True,
                )
            else:
                snippet = "\n".join(
                    f"{i:>6}\u2192{line}"
                    for i, line in enumerate(new.split("\n"), r.randint(1, 300))
                )
                self.tool(
                    "Edit",
                    {"file_path": path, "old_string": old, "new_string": new},
                    f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{snippet}",
                    extra={"filePath": path, "oldString": old, "newString": new},
                )
        elif x < 0.85:
            hits = "\n".join(
                f"{self.cwd}/{r.choice(p.paths)}:{r.randint(1, 900)}:{line}"
                for line in p.lines(p.code, r.randint(1, 60))
            )
            self.tool(
                "Grep",
                {
                    "pattern": r.choice(WORDS),
                    "path": self.cwd,
                    "output_mode": "content",
                    "-n": True,
                },
                hits,
            )
        elif x < 0.92:
            content = self.file_text()
            self.tool(
                "Write",
                {"file_path": path, "content": content},
                f"File created successfully at: {path}",
                extra={"type": "create", "filePath": path, "content": content},
            )
        else:
            todos = [
                {
                    "content": p.prose(1, 1)[:80],
                    "status": r.choice(["pending", "in_progress", "completed"]),
                    "activeForm": p.prose(1, 1)[:60],
                }
                for _ in range(r.randint(2, 6))
            ]
            self.tool("TodoWrite", {"todos": todos}, "Todos have been modified successfully.")

    def skill(self) -> None:
        r, p = self.rng, self.p
        name = r.choice(SKILLS)
        if r.random() < 0.6:
            self.tool(
                "Skill",
                {"skill": name},
                f"Launching skill: {name}",
                extra={"success": True, "commandName": name},
            )
            self.user(
                [
                    {
                        "type": "text",
                        "text": f"Base directory for this skill: /home/dev/.claude/skills/{name}\n\n# {name}\n\n{p.prose(3, 8)}",
                    }
                ],
                isMeta=True,
            )
        else:
            skill_md = f"---\nname: {name}\ndescription: {p.prose(1, 2)}\n---\n\n# {name}\n\n{p.prose(4, 10)}"
            self.tool(
                "Read",
                {"file_path": f"/home/dev/.claude/skills/{name}/SKILL.md"},
                "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(skill_md.split("\n"), 1)),
            )

    def subagent(self, secret_chance: float) -> None:
        """A Task call, answered by a subagent file of its own."""
        r, p = self.rng, self.p
        prompt = f"{p.prompt()} Report file:line for each finding; do not edit anything."
        agent = "".join(r.choices(HEX, k=8))
        sub = ClaudeSession(self.g, self.t, self.cwd, self.session_id, agent=agent)
        sub.model = CC_MODELS[2]
        sub.user(prompt)
        for _ in range(r.randint(2, 8)):
            if r.random() < 0.4:
                sub.assistant([{"type": "text", "text": p.prose(1, 2)}])
            sub.step(secret_chance)
        report = p.prose(3, 10)
        sub.assistant([{"type": "text", "text": report}])
        self.subagents.append(sub)
        self.t = sub.t
        self.tool(
            "Task",
            {
                "description": p.prose(1, 1)[:50],
                "prompt": prompt,
                "subagent_type": "general-purpose",
            },
            [{"type": "text", "text": report}],
            extra={
                "status": "completed",
                "agentId": agent,
                "totalDurationMs": r.randint(5000, 90000),
            },
        )

    def turn(self, secret_chance: float, first: bool) -> None:
        r, p = self.rng, self.p
        self.t += timedelta(seconds=r.uniform(5, 900))
        prompt = p.prompt(followup=not first and r.random() < 0.3)
        if r.random() < secret_chance:
            prompt += f"\n\nhere's what I have locally:\n\n{self.g.secrets.env_block() if r.random() < 0.5 else self.g.secrets.inline()}"
        self.emit(
            {
                "type": "file-history-snapshot",
                "messageId": _uuid4(r),
                "snapshot": {
                    "messageId": _uuid4(r),
                    "trackedFileBackups": {},
                    "timestamp": _iso(self.t),
                },
                "isSnapshotUpdate": False,
            }
        )
        self.user(prompt)
        steps = min(int(r.expovariate(1 / 6)) + 1, 40)
        for i in range(steps):
            blocks = []
            if r.random() < 0.35:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": p.prose(2, 9),
                        "signature": "".join(r.choices(ALNUM, k=r.randint(200, 600))),
                    }
                )
            if r.random() < 0.45:
                blocks.append({"type": "text", "text": p.prose(1, 3)})
            if blocks:
                self.assistant(blocks)
            y = r.random()
            if y < 0.04:
                self.skill()
            elif y < 0.07 and self.agent is None:
                self.subagent(secret_chance)
            else:
                self.step(secret_chance)
            if i > 2 and r.random() < 0.02:
                self.user([{"type": "text", "text": "[Request interrupted by user]"}])
                return
        self.assistant([{"type": "text", "text": p.prose(2, 7)}])
        rec = self.base("system")
        rec.update(
            {
                "subtype": "turn_duration",
                "durationMs": r.randint(2000, 400000),
                "isMeta": False,
                "timestamp": self.tick(),
            }
        )
        self.emit(rec)

    def compaction(self) -> None:
        rec = self.base("system")
        rec["parentUuid"] = None
        rec.update(
            {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "compactMetadata": {
                    "trigger": "auto",
                    "preTokens": self.rng.randint(120000, 190000),
                },
                "isMeta": False,
                "timestamp": self.tick(60, 600),
                "level": "info",
            }
        )
        self.emit(rec)
        self.user(
            "This session is being continued from a previous conversation that ran out of context. "
            f"The conversation is summarized below:\nAnalysis:\n{self.p.prose(6, 20)}",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        )

    def run(self, target: int, secret_chance: float) -> None:
        r = self.rng
        if r.random() < 0.3:
            self.emit(
                {"type": "summary", "summary": self.p.prose(1, 1)[:80], "leafUuid": _uuid4(r)}
            )
        listing = "\n".join(f"- {s}: {self.p.prose(1, 1)}" for s in r.sample(SKILLS, 4))
        self.user(
            f"<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n{listing}\n</system-reminder>",
            isMeta=True,
        )
        first = True
        while self.size + sum(s.size for s in self.subagents) < target:
            self.turn(secret_chance, first)
            first = False
            if r.random() < 0.04:
                self.compaction()
            if r.random() < 0.02:
                self.emit(
                    {
                        "type": "queue-operation",
                        "operation": "enqueue",
                        "timestamp": _iso(self.t),
                        "content": self.p.prompt(True),
                        "sessionId": self.session_id,
                    }
                )


class CodexSession(Session):
    def __init__(self, gen: Generator, start: datetime, cwd: str, thread: str):
        super().__init__(gen, start)
        self.cwd, self.thread = cwd, thread
        self.model = self.rng.choice(CODEX_MODELS)

    def item(
        self, payload: dict, kind: str = "response_item", lo: float = 0.05, hi: float = 2.0
    ) -> None:
        self.emit({"timestamp": self.tick(lo, hi), "type": kind, "payload": payload})

    def call(self, secret_chance: float) -> None:
        r, p = self.rng, self.p
        call_id = "call_" + "".join(r.choices(ALNUM, k=24))
        if r.random() < 0.25:
            patch = (
                f"*** Begin Patch\n*** Update File: {r.choice(p.paths)}\n@@\n"
                + "\n".join(
                    ("-" if r.random() < 0.3 else "+") + line
                    for line in p.lines(p.code, r.randint(2, 40))
                )
                + "\n*** End Patch"
            )
            self.item(
                {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": "apply_patch",
                    "input": patch,
                }
            )
            out = {
                "output": f"Success. Updated the following files:\nM {r.choice(p.paths)}\n",
                "metadata": {"exit_code": 0, "duration_seconds": 0.0},
            }
            self.item(
                {"type": "custom_tool_call_output", "call_id": call_id, "output": json.dumps(out)}
            )
            return
        y = r.random()
        if y < 0.04:
            name = r.choice(SKILLS)
            command = r.choice(
                [
                    f"cat ~/.codex/skills/{name}/SKILL.md",
                    f"sed -n 1,120p {self.cwd}/.agents/skills/{name}/SKILL.md",
                ]
            )
            text, failed = (
                f"---\nname: {name}\ndescription: {p.prose(1, 2)}\n---\n\n# {name}\n\n{p.prose(4, 10)}",
                False,
            )
        else:
            command = r.choice(
                [
                    "pytest -q",
                    "ls",
                    f"sed -n 1,200p {r.choice(p.paths)}",
                    f"rg -n {r.choice(WORDS)}",
                    "git diff",
                    "env",
                    "cat config.yml",
                    "npm run build",
                    "go vet ./...",
                    "cargo test",
                ]
            )
            if command.startswith(("sed", "git diff")):
                text, failed = self.file_text(), False
            else:
                text, failed = self.tool_output(
                    secret_chance * (4 if command in ("env", "cat config.yml") else 1)
                )
        args = {"command": ["bash", "-lc", command], "workdir": self.cwd}
        if r.random() < 0.2:
            args["timeout_ms"] = 120000
        self.item(
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps(args),
                "call_id": call_id,
            }
        )
        out = {
            "output": text,
            "metadata": {
                "exit_code": r.choice([1, 2, 101]) if failed else 0,
                "duration_seconds": round(r.uniform(0, 30), 1),
            },
        }
        self.item(
            {"type": "function_call_output", "call_id": call_id, "output": json.dumps(out)},
            lo=0.1,
            hi=20,
        )

    def tokens(self) -> None:
        r = self.rng
        usage = {
            "input_tokens": r.randint(2000, 200000),
            "cached_input_tokens": r.randint(0, 150000),
            "output_tokens": r.randint(50, 5000),
            "reasoning_output_tokens": r.randint(0, 3000),
            "total_tokens": r.randint(2000, 220000),
        }
        self.item(
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": usage,
                    "last_token_usage": usage,
                    "model_context_window": 272000,
                },
                "rate_limits": {
                    "primary": {
                        "used_percent": float(r.randint(0, 90)),
                        "window_minutes": 300,
                        "resets_at": 1795771200,
                    }
                },
            },
            "event_msg",
        )

    def turn(self, secret_chance: float, first: bool) -> None:
        r, p = self.rng, self.p
        self.t += timedelta(seconds=r.uniform(5, 900))
        turn_id = _uuid7(r, self.t)
        self.item(
            {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000},
            "event_msg",
        )
        self.item(
            {
                "turn_id": turn_id,
                "cwd": self.cwd,
                "approval_policy": "on-request",
                "sandbox_policy": {
                    "type": "workspace-write",
                    "writable_roots": [],
                    "network_access": False,
                },
                "model": self.model,
                "effort": r.choice(["low", "medium", "high"]),
                "summary": "auto",
            },
            "turn_context",
        )
        prompt = p.prompt(followup=not first and r.random() < 0.3)
        if r.random() < secret_chance:
            prompt += f"\n\n{self.g.secrets.inline()}"
        self.item(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
        )
        self.item({"type": "user_message", "message": prompt, "images": []}, "event_msg")
        steps = min(int(r.expovariate(1 / 6)) + 1, 40)
        for i in range(steps):
            if r.random() < 0.5:
                self.item(
                    {
                        "type": "reasoning",
                        "summary": [
                            {
                                "type": "summary_text",
                                "text": f"**{p.prose(1, 1)[:50]}**\n\n{p.prose(1, 4)}",
                            }
                        ],
                        "content": None,
                        "encrypted_content": "gAAAAAB"
                        + "".join(r.choices(ALNUM, k=r.randint(300, 2400))),
                    }
                )
            self.call(secret_chance)
            if r.random() < 0.3:
                self.tokens()
            if i > 2 and r.random() < 0.02:
                self.item(
                    {"type": "turn_aborted", "turn_id": turn_id, "reason": "interrupted"},
                    "event_msg",
                )
                return
        answer = p.prose(2, 7)
        self.item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer}],
            }
        )
        self.item({"type": "agent_message", "message": answer}, "event_msg")
        self.tokens()
        self.item(
            {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer}, "event_msg"
        )

    def head(self, instructions: str) -> None:
        r = self.rng
        self.item(
            {
                "id": self.thread,
                "timestamp": _iso(self.t),
                "cwd": self.cwd,
                "originator": "codex_cli_rs",
                "cli_version": r.choice(["0.58.0", "0.63.0", "0.66.1"]),
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {"text": instructions},
                "git": {
                    "commit_hash": "".join(r.choices(HEX, k=40)),
                    "branch": r.choice(["main", "dev"]),
                    "repository_url": f"git@github.com:acme/{PurePosixPath(self.cwd).name}.git",
                },
            },
            "session_meta",
        )
        if r.random() < 0.6:
            self.item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": f"# AGENTS.md instructions for {self.cwd}\n\n<user_instructions>\n{self.p.prose(3, 10)}\n</user_instructions>",
                        }
                    ],
                }
            )
        self.item(
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
                        "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>",
                    }
                ],
            }
        )

    def compaction(self) -> None:
        self.item(
            {
                "message": f"Summary of the conversation so far: {self.p.prose(4, 14)}",
                "replacement_history": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": self.p.prompt()}],
                    }
                ],
            },
            "compacted",
            30,
            300,
        )

    def run(self, target: int, secret_chance: float) -> None:
        self.head(self.g.instructions)
        first = True
        while self.size < target:
            self.turn(secret_chance, first)
            first = False
            if self.rng.random() < 0.04:
                self.compaction()


class Generator:
    def __init__(self, root: Path, seed: int = 20261128):
        self.root = root
        self.rng = Random(seed)
        self.pools = Pools(self.rng)
        self.secrets = Secrets(self.rng)
        self.instructions = (
            "You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user's computer.\n\n"
            + "\n\n".join(
                f"## {w.capitalize()}\n\n{self.pools.prose(4, 9)}"
                for w in self.rng.sample(WORDS, 8)
            )
        )
        self.files = 0
        self.bytes = 0
        self.epoch = datetime(2025, 6, 1, tzinfo=UTC)

    def _when(self) -> datetime:
        return self.epoch + timedelta(seconds=self.rng.uniform(0, 360 * 86400))

    def _cwd(self) -> str:
        r = self.rng
        return f"{r.choice(['/home', '/home', '/Users'])}/{r.choice(USERS)}/{r.choice(PROJECTS)}"

    def _write(self, path: Path, lines: list[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(lines).encode("utf-8")
        path.write_bytes(data)
        self.files += 1
        self.bytes += len(data)

    def claude(self, target: int, secret_chance: float = 0.03) -> None:
        cwd, sid = self._cwd(), _uuid4(self.rng)
        s = ClaudeSession(self, self._when(), cwd, sid)
        if target > 0:
            s.run(target, secret_chance)
        else:
            self._small_claude(s)
        folder = self.root / "claude" / "projects" / munged_cwd(cwd)
        self._write(folder / f"{sid}.jsonl", s.out)
        for sub in s.subagents:
            self._write(folder / sid / "subagents" / f"agent-{sub.agent}.jsonl", sub.out)

    def codex(self, target: int, secret_chance: float = 0.03) -> None:
        start = self._when()
        thread = _uuid7(self.rng, start)
        s = CodexSession(self, start, self._cwd(), thread)
        if target > 0:
            s.run(target, secret_chance)
        else:
            s.head(self.instructions[:1500])
            self._small_codex(s)
        name = f"rollout-{start.strftime('%Y-%m-%dT%H-%M-%S')}-{thread}.jsonl"
        self._write(self.root / "codex" / "sessions" / start.strftime("%Y/%m/%d") / name, s.out)

    def _small_claude(self, s: ClaudeSession) -> None:
        """A few lines: a question and its answer (the bulk of a real history is short sessions)."""
        s.user(s.p.prompt())
        s.assistant([{"type": "text", "text": s.p.prose(1, 4)}])
        rec = s.base("system")
        rec.update(
            {
                "subtype": "turn_duration",
                "durationMs": s.rng.randint(2000, 40000),
                "isMeta": False,
                "timestamp": s.tick(),
            }
        )
        s.emit(rec)

    def _small_codex(self, s: CodexSession) -> None:
        prompt, answer = s.p.prompt(), s.p.prose(1, 4)
        s.item(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
        )
        s.item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer}],
            }
        )
        s.item(
            {"type": "task_complete", "turn_id": _uuid7(s.rng, s.t), "last_agent_message": answer},
            "event_msg",
        )

    def corpus(self, total: int) -> None:
        """Sessions of log-normal size (median ~200 kB, up to 12 MB), half of the bytes in each format;
        the first of each format is long (10 MB in a 200 MB corpus: more than one delta)."""
        half = total // 2
        cc = cx = 0
        long = 2
        while cc < half or cx < half:
            size = int(min(12e6, max(8e3, self.rng.lognormvariate(12.2, 1.2))))
            if long:
                size, long = int(min(10e6, total / 20)), long - 1
            before = self.bytes
            if cc <= cx:
                self.claude(min(size, half - cc + 4096))
                cc += self.bytes - before
            else:
                self.codex(min(size, half - cx + 4096))
                cx += self.bytes - before

    def small(self, n: int) -> None:
        for i in range(n):
            if i % 2 == 0:
                self.claude(0)
            else:
                self.codex(0)


# -- ingestion -------------------------------------------------------------------------------


def _one(home: Path, delta: DeltaRef) -> int:
    """render → offline split → commit, as the delta workflow does; the atoms written."""
    render_delta(home, delta)
    _split_offline(home, DeltaInput(delta=delta))
    result = commit_delta(home, delta)
    if not result.committed:
        raise RuntimeError(f"{delta.label()}: not committed ({result.reason})")
    return len(result.atoms)


def ingest(home: Path, sources: list[Source], workers: int = 1) -> dict[str, float]:
    """Scan and process deltas until a scan finds none."""
    started = time.perf_counter()
    rounds = deltas = 0
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    try:
        while True:
            found = scan(home, sources, SCAN)
            for problem in found.problems:
                print(f"  scan problem: {problem}")
            if not found.deltas:
                break
            rounds += 1
            deltas += len(found.deltas)
            if pool is None:
                for d in found.deltas:
                    _one(home, d)
            else:
                list(pool.map(_one, [home] * len(found.deltas), found.deltas, chunksize=4))
    finally:
        if pool is not None:
            pool.shutdown()
    return {"seconds": time.perf_counter() - started, "rounds": rounds, "deltas": deltas}


def count_atoms(home: Path) -> int:
    n = 0
    for sessions in home.glob("*_sessions"):
        for traj in os.scandir(sessions):
            if traj.is_dir():
                with os.scandir(os.path.join(traj.path, "tasks")) as it:
                    n += sum(
                        1 for e in it if e.name.startswith("atom_") and e.name.endswith(".json")
                    )
    return n


def leaks(home: Path, planted: dict[str, str]) -> dict[str, int]:
    """Planted secrets found in the views and atoms, by kind."""
    token = re.compile(r"[A-Za-z0-9_\-+/.=]*(?:" + MARK + "|" + MARK_UP + r")[A-Za-z0-9_\-+/.=]*")
    found: dict[str, int] = {}
    for path in home.glob("*_sessions/**/*"):
        if path.suffix not in (".md", ".json") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if MARK not in text and MARK_UP not in text:
            continue
        for m in token.finditer(text):
            kind = next(
                (k for s, k in planted.items() if s in m.group(0) or m.group(0) in s), "unknown"
            )
            found[kind] = found.get(kind, 0) + 1
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mb", type=float, default=200, help="corpus size in MB (10^6 bytes), half per format"
    )
    ap.add_argument(
        "--files",
        type=int,
        default=10_000,
        help="files the no-change tick scans (small sessions top the corpus up)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=0,
        help="also ingest with a pool of N processes (into a second skills home)",
    )
    ap.add_argument("--repeat", type=int, default=5, help="no-change ticks timed")
    ap.add_argument(
        "--dir",
        type=Path,
        help="work folder (must be empty or absent; kept); default a temporary folder, removed",
    )
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 10 MB, 1,000 files")
    args = ap.parse_args()
    if args.quick:
        args.mb, args.files = min(args.mb, 10), min(args.files, 1000)

    if args.dir is not None:
        if args.dir.exists() and any(args.dir.iterdir()):
            ap.error(f"{args.dir} is not empty")
        work = args.dir
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="xsky-bench-ingest-"))
    try:
        run(args, work)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> None:
    root = work / "transcripts"
    sources = [
        Source("claude-code", root / "claude" / "projects", "bench"),
        Source("codex", root / "codex", "bench"),
    ]

    t0 = time.perf_counter()
    gen = Generator(root, args.seed)
    gen.corpus(int(args.mb * 1e6))
    corpus_files, corpus_bytes = gen.files, gen.bytes
    cc_bytes = sum(p.stat().st_size for p in (root / "claude").rglob("*.jsonl"))
    print(
        f"generated {corpus_bytes / 1e6:.1f} MB in {corpus_files:,} files ({cc_bytes / 1e6:.1f} MB Claude Code, "
        f"{(corpus_bytes - cc_bytes) / 1e6:.1f} MB Codex; {len(gen.secrets.planted):,} secrets planted) in {time.perf_counter() - t0:.1f} s"
    )

    home = work / "home"
    one = ingest(home, sources)
    atoms = count_atoms(home)
    print(
        f"ingested (1 process): {one['seconds']:.1f} s, {one['deltas']:,} deltas in {one['rounds']} scan rounds, {atoms:,} atoms"
    )
    pool = None
    if args.workers > 1:
        pool = ingest(work / "home-pool", sources, args.workers)
        print(
            f"ingested ({args.workers} processes): {pool['seconds']:.1f} s, {pool['deltas']:,} deltas, {count_atoms(work / 'home-pool'):,} atoms"
        )
    leaked = leaks(home, gen.secrets.planted)

    t0 = time.perf_counter()
    gen.small(max(0, args.files - corpus_files))
    small_files = gen.files - corpus_files
    small_gen = time.perf_counter() - t0
    top = ingest(home, sources)
    print(
        f"topped up with {small_files:,} small sessions ({(gen.bytes - corpus_bytes) / 1e6:.1f} MB, generated in {small_gen:.1f} s), "
        f"ingested in {top['seconds']:.1f} s"
    )

    ticks, deltas, files = [], 0, 0
    for _ in range(args.repeat):
        t = time.perf_counter()
        res = scan(home, sources, SCAN)
        ticks.append(time.perf_counter() - t)
        deltas += len(res.deltas) + res.remaining
        files = res.files
    median, worst = statistics.median(ticks), max(ticks)

    mb = corpus_bytes / 1e6
    print()
    print(
        f"{'corpus':34}{mb:>10.1f} MB in {corpus_files:,} files (Claude Code + Codex, ~half each)"
    )
    print(
        f"{'ingestion, 1 process':34}{one['seconds']:>10.1f} s   {mb / one['seconds']:>7.2f} MB/s   {atoms:,} atoms"
    )
    if pool is not None:
        print(
            f"{f'ingestion, {args.workers} processes':34}{pool['seconds']:>10.1f} s   {mb / pool['seconds']:>7.2f} MB/s"
        )
    print(
        f"{'small sessions, 1 process':34}{top['seconds']:>10.1f} s   {small_files / max(top['seconds'], 1e-9):>7.0f} files/s"
    )
    print(
        f"{'planted secrets leaked':34}{sum(leaked.values()):>10,} of {len(gen.secrets.planted):,}"
        + (f"  ({', '.join(f'{k} {v}' for k, v in sorted(leaked.items()))})" if leaked else "")
    )
    print(
        f"{f'no-change tick over {files:,} files':34}{median * 1e3:>10.0f} ms median, {worst * 1e3:.0f} ms max of {args.repeat}; "
        f"{deltas} deltas found"
    )
    ok = worst < 1.0 and deltas == 0 and files >= args.files
    print(
        f"target (no-change tick < 1 s over ≥ {args.files:,} files, 0 deltas): {'met' if ok else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
