"""A person's verdict on a skill sent the moment its entity starts.

`skills promote NAME` right after a scores signal started NAME's entity reached the entity before
it had read the skill from git: its validator refused the verdict as " has no staging version to
promote" (no name: nothing read yet) though git had one (found by a clean clone's
test_skill_library, where the CLI is forked warm and sends its update ~0.1 s after the signal).
Here the entity's `load_skill_state` is held until the verdict has been sent, so the window is
open every time, not one run in five."""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateStage
from temporalio.worker import Worker

from activities.skills import git as skill_git
from activities.skills.entity import EntityActivities
from tests.integration.skill_library_helpers import make_skill
from workflows.skills.entity import SkillEntityWorkflow
from xsky.config import load_settings
from xsky.skills.models import CanaryVerdict, RetireRequest, SkillEntityInput, SkillEntityState

pytestmark = pytest.mark.integration


class Held:
    """The entity's activities, with `load_skill_state` held until released."""

    def __init__(self, entity: EntityActivities) -> None:
        self.entity = entity
        self.released = threading.Event()

    @activity.defn(name="load_skill_state")
    def load_skill_state(self, inp: SkillEntityInput) -> SkillEntityState:
        assert self.released.wait(30), "never released"
        return self.entity.load_skill_state(inp)

    def all(self) -> list[Callable[..., Any]]:
        rest = [a for a in self.entity.all() if a != self.entity.load_skill_state]
        return [self.load_skill_state, *rest]


@pytest.fixture
async def held(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Held, str, Path]]:
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "home"))
    settings = load_settings()
    queue = f"early-{uuid.uuid4().hex[:6]}"
    gate = Held(EntityActivities(settings))
    async with Worker(
        client,
        task_queue=queue,
        workflows=[SkillEntityWorkflow],
        activities=gate.all(),
        activity_executor=ThreadPoolExecutor(4),
    ):
        yield gate, queue, settings.skills_home


async def _early_verdict(client: Client, queue: str, slug: str, verdict: str) -> Any:
    handle = await client.start_workflow(
        SkillEntityWorkflow.run, SkillEntityInput(slug=slug), id=f"{queue}-{slug}", task_queue=queue
    )
    # accepted (not refused) while the entity has not read its skill yet
    return await handle.start_update(
        SkillEntityWorkflow.decide,
        CanaryVerdict(verdict=verdict, by="tester", reason="sent at once"),  # type: ignore[arg-type]
        wait_for_stage=WorkflowUpdateStage.ACCEPTED,
    )


async def test_a_verdict_sent_before_the_entity_read_its_skill_is_carried_out(
    client: Client, held: tuple[Held, str, Path]
) -> None:
    gate, queue, home = held
    repo = make_skill(home, "early-skill", "Does e. Use when e.", "STAGING early")
    staging = skill_git.branch_commit(repo, "staging")
    assert staging is not None
    update = await _early_verdict(client, queue, "early-skill", "discard")
    gate.released.set()
    said = await update.result()
    assert "discard" in said.lower()
    assert skill_git.branch_commit(repo, "staging") is None
    (tag,) = skill_git.tags(repo)
    assert tag["tag"] == f"discarded/{staging[:12]}"


async def test_a_verdict_on_a_skill_without_staging_is_refused_by_name_once_read(
    client: Client, held: tuple[Held, str, Path]
) -> None:
    gate, queue, home = held
    make_skill(home, "plain-skill", "Does p. Use when p.")
    update = await _early_verdict(client, queue, "plain-skill", "promote")
    gate.released.set()
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await update.result()
    assert "plain-skill has no staging version to promote" in str(refused.value.cause)
    # and once read, a second verdict is refused at once, by name, as before
    handle = client.get_workflow_handle(f"{queue}-plain-skill")
    with pytest.raises(WorkflowUpdateFailedError) as again:
        await handle.execute_update(
            SkillEntityWorkflow.decide, CanaryVerdict(verdict="discard", by="tester")
        )
    assert "plain-skill has no staging version to discard" in str(again.value.cause)


async def test_a_rename_taken_before_the_entity_read_its_skill_is_refused_if_it_is_published(
    client: Client, held: tuple[Held, str, Path]
) -> None:
    """Only baby skills are renamed: a `retire` taken before the skill was read went through
    on a published one (its validator could not know yet)."""
    gate, queue, home = held
    make_skill(home, "live-skill", "Does l. Use when l.")
    handle = await client.start_workflow(
        SkillEntityWorkflow.run,
        SkillEntityInput(slug="live-skill"),
        id=f"{queue}-live-skill",
        task_queue=queue,
    )
    update = await handle.start_update(
        SkillEntityWorkflow.retire,
        RetireRequest(renamed_to="other-skill"),
        wait_for_stage=WorkflowUpdateStage.ACCEPTED,
    )
    gate.released.set()
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await update.result()
    assert "live-skill is published (main); only baby skills are renamed" in str(
        refused.value.cause
    )
    view = await handle.query(SkillEntityWorkflow.view)
    assert view.state == "main"
