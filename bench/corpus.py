"""The ingestion benchmark's corpus: Claude Code sessions and Codex rollouts to a size and a file count."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpus_claude import ClaudeSession
from bench.corpus_codex import CodexSession
from bench.corpus_pools import PROJECTS, USERS, WORDS, Pools, Secrets
from bench.corpus_session import _uuid4, _uuid7
from xsky.skills.transcripts.claude_code import munged_cwd


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
