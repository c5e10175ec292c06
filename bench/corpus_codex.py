"""A seeded Codex rollout for the ingestion benchmark."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpus_pools import ALNUM, CODEX_MODELS, HEX, SKILLS, WORDS
from bench.corpus_session import Session, _iso, _uuid7

if TYPE_CHECKING:  # the generator that drives a session (bench/corpus.py)
    from bench.corpus import Generator


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
