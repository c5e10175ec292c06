"""activities/model_tools.py: schemas from the argument models, bad calls answered, the loop's ends.

The loop runs the real ``openai`` client against tests/fake_llm.py's HTTP server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from activities import llm
from activities.model_tools import ModelTool, tool_loop
from activities.skills.cluster_agent import cluster
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from xsky.skills.atoms import AtomTask
from xsky.skills.clustering import SkillSummary


class Move(BaseModel):
    """Move a piece."""

    piece: str = Field(description="which piece")
    steps: int = Field(ge=1, le=3)
    note: str | None = None


class MoveFar(Move):
    distance: int


def params(tool: ModelTool[Any]) -> dict[str, Any]:
    return tool.schema()["function"]["parameters"]


def test_the_schema_is_the_argument_model_and_a_field_added_to_it_shows():
    tool = ModelTool.of("move", Move, lambda a: "ok")
    schema = tool.schema()
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "move"
    assert schema["function"]["description"] == "Move a piece."
    assert schema["function"]["strict"] is True
    p = params(tool)
    assert set(p["properties"]) == {"piece", "steps", "note"} == set(p["required"])
    assert p["properties"]["piece"]["description"] == "which piece"
    assert (p["properties"]["steps"]["minimum"], p["properties"]["steps"]["maximum"]) == (1, 3)
    assert {"type": "null"} in p["properties"]["note"]["anyOf"]  # optional: nullable
    assert p["additionalProperties"] is False and "title" not in p and "description" not in p
    assert "title" not in p["properties"]["piece"]
    far = params(ModelTool("move", "Move a piece far.", MoveFar, lambda a: "ok"))
    assert "distance" in far["properties"] and "distance" in far["required"]


def test_the_skill_agents_tools_carry_their_constraints():
    from activities.skills.cluster_agent import _Placing
    from activities.skills.task_agent import _WindowChat

    window = {t.name: params(t) for t in _WindowChat(None, {}, None).tools()}  # type: ignore[arg-type]
    score = window["submit_atom"]["properties"]["ux_score"]
    assert (score["type"], score["minimum"], score["maximum"]) == ("integer", 1, 10)
    assert set(window["submit_atom"]["required"]) >= {"boundary", "intent", "ux_score"}
    placing = {t.name: params(t) for t in _Placing(atom(), {}, []).tools()}
    assert list(placing) == [
        "add_to_skill",
        "new_skill_folder",
        "skip",
        "rename_skill",
        "move_atom",
    ]
    assert placing["add_to_skill"]["properties"]["weightscore"]["maximum"] == 10


async def test_the_skill_editor_refuses_a_path_outside_the_folder_in_its_argument_model(
    tmp_path: Path,
):
    from activities.skills.edit_agent import _Folder

    folder = _Folder(tmp_path, tmp_path / "skill", None, lambda work: [])  # type: ignore[arg-type]
    tools = {t.name: t for t in folder.tools()}
    for path in ("../escape.md", "scripts/../../escape.sh", "notes.txt", "/etc/passwd"):
        answer = await tools["write_file"].answer(json.dumps({"path": path, "content": "x"}))
        assert answer.startswith("ERROR: the arguments of write_file are not valid: path:")
        assert "paths are SKILL.md or under scripts/" in answer
    assert not any(tmp_path.rglob("*"))
    ok = await tools["write_file"].answer(json.dumps({"path": "scripts/a.sh", "content": "x"}))
    assert ok == "wrote scripts/a.sh (1 characters)"
    assert (tmp_path / "skill" / "scripts" / "a.sh").read_text() == "x"


def target(fake: FakeLLM) -> llm.LLMTarget:
    return llm.LLMTarget(model="fake-model", base_url=fake.base_url)


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


async def run(fake: FakeLLM, tools: list[ModelTool[Any]], **kw: Any) -> Any:
    beats: list[int] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": "play"}]
    async with llm.client_for(target(fake)) as client:
        end = await tool_loop(client, target(fake), messages, tools, beat=beats.append, **kw)
    return end, beats, messages


async def test_bad_arguments_and_unknown_tools_are_answered_and_the_good_call_runs(
    fake_llm: FakeLLM,
):
    seen: list[Move] = []

    def move(a: Move) -> str:
        seen.append(a)
        return f"moved {a.piece} {a.steps}"

    def responder(req: dict[str, Any], i: int) -> Reply:
        if turn_of(req) > 0:
            return text("finished")
        return calls(
            ("move", {"piece": "rook", "steps": 9}),
            ("move", {"steps": 1}),
            ("move", ["rook", 1]),  # type: ignore[arg-type] - not an object, on purpose
            ("fly", {"piece": "rook"}),
            ("move", {"piece": "rook", "steps": 2}),
        )

    fake_llm.responder = responder
    tool = ModelTool.of("move", Move, move)
    end, beats, messages = await run(fake_llm, [tool], max_turns=5)
    assert (end.turns, end.reason, beats) == (2, "answered", [1, 2])
    assert fake_llm.requests[0]["tools"] == [tool.schema()]  # what is sent is the model's schema
    bad_steps, missing, not_object, unknown, ok = tool_messages(fake_llm.requests[1])
    assert bad_steps.startswith("ERROR: the arguments of move are not valid: steps:")
    assert "less than or equal to 3" in bad_steps and "https://" not in bad_steps
    assert missing == "ERROR: the arguments of move are not valid: piece: Field required"
    assert not_object == "ERROR: the arguments of move must be a JSON object"
    assert unknown == "ERROR: unknown tool 'fly'; tools: move"
    assert ok == "moved rook 2" and [(a.piece, a.steps) for a in seen] == [("rook", 2)]
    assert messages[-1]["content"] == "finished"


async def test_the_loop_ends_when_done_and_async_tools_are_awaited(fake_llm: FakeLLM):
    seen: list[str] = []

    async def move(a: Move) -> str:
        seen.append(a.piece)
        return "moved"

    fake_llm.responder = lambda req, i: calls(("move", {"piece": f"p{i}", "steps": 1}))
    end, beats, _ = await run(
        fake_llm, [ModelTool.of("move", Move, move)], max_turns=9, done=lambda: len(seen) >= 2
    )
    assert (end.turns, end.reason, beats, seen) == (2, "done", [1, 2], ["p0", "p1"])
    assert len(fake_llm.requests) == 2


async def test_the_loop_stops_at_max_turns_and_a_nudge_sends_the_model_on(fake_llm: FakeLLM):
    fake_llm.responder = lambda req, i: calls(("move", {"piece": "x", "steps": 1}))
    tool = ModelTool.of("move", Move, lambda a: "moved")
    end, beats, _ = await run(fake_llm, [tool], max_turns=3)
    assert (end.turns, end.reason, beats, len(fake_llm.requests)) == (3, "max_turns", [1, 2, 3], 3)

    fake_llm.requests.clear()
    fake_llm.responder = lambda req, i: text("I think I am done")
    nudges = iter(["Not yet: move a piece.", None])
    end, _, messages = await run(fake_llm, [tool], max_turns=5, nudge=lambda: next(nudges))
    assert (end.turns, end.reason) == (2, "answered")
    assert fake_llm.requests[1]["messages"][-1] == {
        "role": "user",
        "content": "Not yet: move a piece.",
    }


def atom() -> AtomTask:
    return AtomTask(
        atom_id="atom_traj_cc_x_00000001_0001",
        traj_id="traj_cc_x_00000001",
        offset_start=0,
        offset_end=10,
        intent="add a postgres index with a migration",
        summary="wrote a dbmate migration",
        tags=["postgres", "index"],
        ux_score=8,
    )


async def test_the_cluster_agent_answers_a_bad_weight_and_falls_back_offline_without_a_decision(
    fake_llm: FakeLLM,
):
    skills = [SkillSummary(name="sql-index-migrations", description="indexes", keywords=["index"])]

    def corrects(req: dict[str, Any], i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(
                ("add_to_skill", {"skill": skills[0].name, "weightscore": 11, "reason": "r"})
            )
        assert "weightscore" in tool_messages(req)[-1] and "ERROR" in tool_messages(req)[-1]
        return calls(("add_to_skill", {"skill": skills[0].name, "weightscore": 6, "reason": "r"}))

    fake_llm.responder = corrects
    beats: list[str] = []
    (decision,) = await cluster(atom(), skills, [], target(fake_llm), beats.append)
    assert (decision.action, decision.skill, decision.weightscore, decision.by) == (
        "add",
        "sql-index-migrations",
        6,
        "model",
    )
    assert beats == ["TaskClusterAgent turn 1", "TaskClusterAgent turn 2"]

    fake_llm.requests.clear()
    fake_llm.responder = lambda req, i: text(
        "hmm"
    )  # never decides: reminded each turn, then offline
    (fallback,) = await cluster(atom(), skills, [], target(fake_llm), lambda note: None)
    assert len(fake_llm.requests) == 6  # MAX_TURNS
    assert json.dumps(fake_llm.requests[-1]["messages"]).count("Decide for the new atom") == 5
    assert fallback.by == "offline" and fallback.reason.startswith("the model gave no decision")
