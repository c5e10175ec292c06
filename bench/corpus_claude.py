"""A seeded Claude Code session for the ingestion benchmark: turns, tools, compactions, subagents."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpus_pools import ALNUM, CC_MODELS, HEX, SKILLS, WORDS
from bench.corpus_session import Session, _iso, _uuid4

if TYPE_CHECKING:  # the generator that drives a session (bench/corpus.py)
    from bench.corpus import Generator


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
