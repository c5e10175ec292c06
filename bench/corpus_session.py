"""What the corpus generators share: ids, timestamps, a JSON line, and the Session base."""

from __future__ import annotations

import json
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from random import Random
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpus_pools import ERRORS

# -- generators ------------------------------------------------------------------------------


if TYPE_CHECKING:  # the generator that drives a session (bench/corpus.py)
    from bench.corpus import Generator


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
