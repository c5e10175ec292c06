"""Text pools and planted secrets of the ingestion benchmark's seeded corpus (bench/ingest.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xsky.skills.runs import ScanInput

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
