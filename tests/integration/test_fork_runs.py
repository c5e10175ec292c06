"""Going back: a run forked at any agent with an edit, and two runs compared."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter

import pytest
from temporalio.common import SearchAttributeKey

from client import XSky, start
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import agents_scheduled, board_shows, plan
from tests.integration.test_cli_runs import starter
from xsky.plan.models import Workflow
from xsky.plan.xml import parse_workflow

pytestmark = pytest.mark.integration


def shell(agent_id: str, command: str, depends: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    return (
        f'<agent name="shell" id="{agent_id}"{dep}><task>step {agent_id}</task>'
        f'<config>{{"tool": "shell", "command": "echo {agent_id} &gt;&gt; ran.log; {command}"}}</config></agent>'
    )


SIX = [
    shell("1", "echo one"),
    shell("2", "echo two-{{agent_1_result}}", "1"),
    shell("3", "echo three-{{agent_2_result}}", "2"),
    shell("4", "echo four-{{agent_3_result}}", "3"),
    shell("5", "echo five-{{agent_4_result}}", "4"),
    shell("6", "echo six-{{agent_1_result}}", "1"),  # a parallel branch
]


def commanded(wf: Workflow, agent_id: str, command: str) -> Workflow:
    """The plan with agent ``agent_id`` a shell agent running ``command`` (a fork's new plan)."""
    config = {"tool": "shell", "command": command}
    agents = [a.model_copy(update={"config": config}) if a.id == agent_id else a for a in wf.agents]
    return wf.model_copy(update={"agents": agents})


def scheduled(events: list[object]) -> list[str]:
    return sorted(a.split("-v")[0] for a in agents_scheduled(events))


async def test_a_completed_run_forked_at_its_4th_agent_runs_only_it_and_what_follows(env: Env):
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(plan(*SIX, name="six"), id=f"xsky-six-{uuid.uuid4().hex[:6]}")
        first = await asyncio.wait_for(run.result(), 60)
        assert first.status == "completed", first.summary
        log = env.settings.runs / run.id / "workspace" / "ran.log"

        # A new plan below T-4: its command changes; T-1..T-3 and the branch T-6 do not.
        new = commanded(parse_workflow(await run.plan()), "4", "echo 4 >> ran.log; echo FOUR")
        fork = await run.fork("T-4", plan=new)
        forked = await asyncio.wait_for(fork.result(), 60)
        assert forked.status == "completed", forked.summary
        results = {a.id: a.result for a in forked.agents}
        assert (
            results["3"] == "three-two-one"
            and results["4"] == "FOUR"
            and results["5"] == "five-FOUR"
        )
        events = [e async for e in fork.handle.fetch_history_events()]
        assert scheduled(events) == ["T-4", "T-5"]  # nothing upstream, nothing beside it
        # The fork worked in a copy of the run's workspace: the run's files are as it left them.
        assert Counter(log.read_text().split()) == Counter("1 2 3 4 5 6".split())
        forked_log = env.settings.runs / fork.id / "workspace" / "ran.log"
        assert Counter(forked_log.read_text().split()) == Counter("1 2 3 4 5 6 4 5".split())
        # The lineage, both ways.
        history = await fork.plan_history()
        assert history[0].reason.startswith(f"resumes {run.id}: 4 results carried over; T-4, T-5")
        assert await (await fork.handle.describe()).memo_value("forkOf") == run.id

        async def linked() -> None:
            assert fork.id in await run.follow_ups()

        await eventually(linked, 10)
        code, said, _ = await starter(env, "status", run.id)
        assert code == 0 and f"↪ forked as {fork.id}" in said, said
        code, said, _ = await starter(env, "status", fork.id)
        assert code == 0 and f"resumes {run.id}" in said, said
        # diff names exactly the agents that changed
        d = await run.diff(fork)
        assert d.changed == ["4", "5"] and d.only_a == [] and d.only_b == []
        assert d.summary().startswith("2 of 6 shared agent(s) differ (T-4, T-5)")
        code, said, _ = await starter(env, "diff", run.id, fork.id)
        lines = said.splitlines()
        assert code == 0 and lines[0].startswith("2 of 6 shared agent(s) differ (T-4, T-5)"), said
        assert "config.command: " in said and "  +FOUR" in said, said  # what changed, and how

        # A fork whose edit changes nothing upstream re-runs nothing upstream: a new task text.
        again = await run.fork("4", text="step 4, said again")
        redone = await asyncio.wait_for(again.result(), 60)
        assert redone.status == "completed", redone.summary
        events = [e async for e in again.handle.fetch_history_events()]
        assert scheduled(events) == ["T-4", "T-5"]
        d = await run.diff(again)
        assert d.changed == ["4"]  # its task; its result and T-5's are the same
        assert any(
            line.startswith("task: step 4 → step 4, said again") for line in d.agents[3].what
        )


async def test_a_running_run_forked_goes_on_and_the_fork_has_a_workspace_of_its_own(env: Env):
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            # T-1 leaves a mark in the original's workspace only (the fork carries its result),
            # so T-2 is slow there and quick in the fork's own workspace.
            plan(
                shell("1", "touch slow; echo one"),
                shell("2", "if test -e slow; then sleep 30; fi; echo two", "1"),
                name="going",
            ),
            id=f"xsky-going-{uuid.uuid4().hex[:6]}",
        )

        async def first_done() -> None:
            assert (await run.board()).counts.get("completed") == 1

        await eventually(first_done, 30)
        fork = await run.fork("T-2", text="step 2 without waiting", plan=None)
        assert await run.temporal_status() == "running"  # the original goes on
        # (its T-2 still sleeps; the fork's T-2 runs the same command in a workspace of its own)
        await run.cancel()
        forked = await asyncio.wait_for(fork.result(), 60)
        assert (
            forked.status == "completed" and {a.id: a.result for a in forked.agents}["2"] == "two"
        )
        own = env.settings.runs / fork.id / "workspace" / "ran.log"
        assert own.read_text().split() == ["2"]  # T-1 carried: its side effect is not redone


async def test_list_descendants_finds_forks_of_forks_which_xsky_resumes_alone_misses(
    env: Env, monkeypatch: pytest.MonkeyPatch
):
    await env.start_worker()
    tag = uuid.uuid4().hex[:6]
    async with XSky.connect() as x:
        first = await x.run(plan(shell("1", "echo one"), name="kin"), id=f"xsky-kin-{tag}")
        assert (await asyncio.wait_for(first.result(), 60)).status == "completed"
        child = await first.fork("T-1", "again", id=f"xsky-kin-{tag}-child")
        assert (await asyncio.wait_for(child.result(), 60)).status == "completed"
        grandchild = await child.fork("T-1", "once more")
        assert (await asyncio.wait_for(grandchild.result(), 60)).status == "completed"

        assert await grandchild.lineage() == [first.id, child.id]
        assert await first.follow_ups() == [child.id]  # the direct parent only

        async def descendants() -> None:
            found = {r.id for r in await x.runs(descendants=first.id)}
            assert found == {child.id, grandchild.id}, found

        await eventually(descendants, 20)
        code, out, err = await starter(env, "list", "--descendants", child.id, "--json")
        assert code == 0, err
        assert [r["workflowId"] for r in json.loads(out)] == [grandchild.id]

        # A server that lacks the attribute: the fork starts all the same, without it.
        monkeypatch.setattr(start, "LINEAGE_KEY", SearchAttributeKey.for_keyword_list("XskyNone"))
        monkeypatch.setattr(start, "lineage_name", "XskyNone")
        unregistered = await grandchild.fork("T-1")
        assert (await asyncio.wait_for(unregistered.result(), 60)).status == "completed"


async def test_a_fork_names_what_it_would_repeat_unasked_and_runs_it_only_when_told(env: Env):
    """A newcomer forked a run at T-1: its T-2 — a refund marked "idempotent": false — ran
    again without a word (exactly once, or ask, held for lost workers only)."""
    from xsky.errors import UsageError

    refund = (
        '<agent name="shell" id="2" depends="1"><task>refund</task><config>{"tool": "shell", '
        '"command": "echo refund-118 &gt;&gt; refunds.log", "idempotent": false}</config></agent>'
    )
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(plan(shell("1", "echo one"), refund, name="refund"))
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"
        log = env.settings.runs / run.id / "workspace" / "refunds.log"
        with pytest.raises(UsageError) as refused:
            await run.fork("T-1")
        said = str(refused.value)
        assert 'T-2 (shell): its <config> says "idempotent": false' in said and "--again" in said
        code, out, err = await starter(env, "fork", run.id, "T-1")
        assert code == 2 and "must not be repeated unasked" in " ".join(err.split()), out + err
        assert log.read_text().split() == ["refund-118"]  # nothing started
        fork = await run.fork("T-1", again=True)
        assert (await asyncio.wait_for(fork.result(), 60)).status == "completed"
        # (in the fork's copy of the workspace: the run forked keeps its own file as it was)
        forked_log = env.settings.runs / fork.id / "workspace" / "refunds.log"
        assert forked_log.read_text().split() == ["refund-118", "refund-118"]
        assert log.read_text().split() == ["refund-118"]
        # a fork that runs again only what may be repeated is not asked about
        named = await run.fork(
            "T-2",
            plan=parse_workflow(plan(shell("1", "echo one"), shell("2", "echo safe", "1"))),
            id=f"my-try-{uuid.uuid4().hex[:6]}",
        )
        # a fork named with --id is still a fork (status said "resumed by": its id has no -fork-)

        async def listed() -> None:
            assert named.id in await run.follow_ups()

        await eventually(listed, 10)
        code, said, _ = await starter(env, "status", run.id)
        assert code == 0 and f"↪ forked as {named.id}" in said, said


async def test_a_retry_of_an_ended_run_names_an_effect_it_was_not_asked_to_run_again(env: Env):
    """walk8: `retry RUN T-3` of an ended run whose T-1 — a refund marked "idempotent": false —
    had failed (after it wrote) started a follow-up that ran the refund again, unasked and
    unsaid ("T-3 and what depends on it run again"); a fork at the same place was refused."""
    from xsky.errors import UsageError

    refund = (
        '<agent name="shell" id="1"><task>refund</task><config>{"tool": "shell", '
        '"command": "echo refund-118 &gt;&gt; refunds.log; exit 3", "idempotent": false}</config>'
        "</agent>"
    )
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(refund, shell("2", "echo two"), shell("3", "echo three", "1,2"), name="refund")
        )
        assert (await asyncio.wait_for(run.result(), 60)).status == "failed"
        log = env.settings.runs / run.id / "workspace" / "refunds.log"
        with pytest.raises(UsageError) as refused:
            await run.retry("T-3")
        said = str(refused.value)
        assert 'T-1 (shell): its <config> says "idempotent": false' in said, said
        assert f"starter.py retry {run.id} T-1" in said and "--again" in said, said
        code, out, err = await starter(env, "retry", run.id, "T-3")
        assert code == 2 and "must not be repeated unasked" in " ".join(err.split()), out + err
        assert log.read_text().split() == ["refund-118"]  # nothing started
        # asked for by name, or with --again, it runs — and the message says so
        again = await run.retry("T-3", again=True)
        assert "so do T-1, which did not complete there" in again.message, again.message
        assert again.follow_up is not None
        follow = await x.get(again.follow_up)
        assert (await asyncio.wait_for(follow.result(), 60)).status == "failed"
        assert log.read_text().split() == ["refund-118", "refund-118"]


async def test_a_fork_at_a_loop_runs_the_loop_again_with_the_edit_not_only_its_gathering(env: Env):
    """The edit landed on the gathering of the old items, which were carried: the loop's
    agents never ran with the new task (and a {{item}} in it had no value)."""
    listing = (
        '<agent name="shell" id="list"><task>list</task>'
        '<config>{"tool": "shell", "command": "printf \'alpha\\\\nbeta\\\\n\'"}</config></agent>'
    )
    loop = (
        '<agent name="llm" id="each" depends="list" forEach="{{agent_list_result}}">'
        "<task>Weigh the item</task></agent>"
    )
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(plan(listing, loop, name="loop-fork"))
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"
        fork = await run.fork("T-each", text="Measure {{item}} (number {{item_index}})")
        done = await asyncio.wait_for(fork.result(), 60)
        assert done.status == "completed", done.summary
        tasks = {a.id: a for a in parse_workflow(await fork.plan()).agents}
        assert tasks["each[2]"].task == "Measure {{item}} (number {{item_index}})"
        events = [e async for e in fork.handle.fetch_history_events()]
        # the items ran again (made anew from the edit), not only the gathering; list carried
        assert scheduled(events) == ["T-each", "T-each[1]", "T-each[2]"], scheduled(events)


async def test_two_forks_of_an_ended_run_work_in_copies_of_its_workspace_which_stays_as_it_was(
    env: Env,
):
    """Two forks of one ended run worked in that run's own folder side by side: one saw and
    overwrote the other's files and deleted the run's (a security review's PoC)."""
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(shell("1", "echo base > base.txt; echo one"), shell("2", "echo two", "1")),
            id=f"xsky-twins-{uuid.uuid4().hex[:6]}",
        )
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"
        wf = parse_workflow(await run.plan())

        def at_2(command: str) -> Workflow:
            return commanded(wf, "2", command)

        fork_x = await run.fork(
            "T-2", plan=at_2("echo X > mine.txt; sleep 3; cat mine.txt; ls | tr '\\n' ' '")
        )
        fork_y = await run.fork(
            "T-2", plan=at_2("echo Y > mine.txt; echo Y > y-only.txt; rm base.txt; echo done")
        )
        x_done, y_done = await asyncio.wait_for(
            asyncio.gather(fork_x.result(), fork_y.result()), 60
        )
        assert x_done.status == y_done.status == "completed", (x_done.summary, y_done.summary)
        said = {a.id: a.result for a in x_done.agents}["2"].split()
        assert said[0] == "X" and "base.txt" in said and "y-only.txt" not in said, said
        own = env.settings.runs / run.id / "workspace"
        assert (own / "base.txt").read_text() == "base\n"  # the run forked keeps its files
        assert not (own / "mine.txt").exists()
        y_dir = env.settings.runs / fork_y.id / "workspace"
        assert not (y_dir / "base.txt").exists() and (y_dir / "y-only.txt").exists()
        # `files` of a fork shows its own copy
        code, out, err = await starter(env, "files", fork_x.id)
        assert code == 0 and "mine.txt" in out and "y-only.txt" not in out, out + err


async def test_gc_keeps_what_a_running_fork_carries_from_the_run_it_forked(env: Env):
    """gc judged a run's folder by that run's end alone and removed the results a running
    fork carried by reference: the fork failed ("its run's stored objects were removed")."""
    from activities.storage import open_objects

    await env.start_worker()
    long = "x" * 600  # over what travels inline: stored under the run's folder
    async with XSky.connect() as x:
        run = await x.run(
            plan(shell("1", f"printf {long}"), shell("2", "echo two", "1")),
            id=f"xsky-gcfork-{uuid.uuid4().hex[:6]}",
        )
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"
        store = open_objects(env.settings)
        before = store.keys(run.id + "/")
        slow = commanded(parse_workflow(await run.plan()), "2", "sleep 4; echo {{agent_1_result}}")
        fork = await run.fork("T-2", plan=slow)
        code, out, err = await starter(env, "gc", "--run", run.id)
        said = " ".join(out.split())
        assert code == 0 and f"kept: {fork.id}, which carries on from it, is running" in said, (
            out + err
        )
        assert store.keys(run.id + "/") == before
        forked = await asyncio.wait_for(fork.result(), 60)
        assert forked.status == "completed", forked.summary
        assert {a.id: a.result for a in forked.agents}["2"] == long
        # once the fork has ended, the run's objects go when both are old enough
        code, out, err = await starter(env, "gc", "--run", run.id)
        assert code == 0 and f"{run.id}: removed" in out, out + err


async def test_a_second_follow_up_is_refused_while_one_works_in_the_workspace(env: Env):
    """Two follow-ups of one ended run work in its workspace: the second is refused while the
    first runs, and told how to go on (a fork works in a copy)."""
    from xsky.errors import UsageError

    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(shell("1", "sleep 30; echo one")), id=f"xsky-busy-{uuid.uuid4().hex[:6]}"
        )
        await eventually(lambda: board_shows(run.handle, {"1": "in_progress"}), 30)
        await run.cancel()
        await asyncio.wait_for(run.result(), 60)
        first = await run.follow_up(["T-1"])

        async def refused() -> None:
            with pytest.raises(UsageError) as e:
                await run.follow_up(["T-1"])
            assert f"{first.id}, a follow-up of {run.id}, is still running" in str(e.value)
            assert "fork" in str(e.value.fix)

        await eventually(refused, 20)  # (once the server's list names the first follow-up)
        await first.cancel()
        await asyncio.wait_for(first.result(), 60)
        fork = await run.fork("T-1", text="again")  # a fork was never refused: its own copy
        await fork.cancel()
        await asyncio.wait_for(fork.result(), 60)
        # A follow-up of the fork works in the fork's copy: it keeps nobody from the run's own
        # (a code review found it refused a retry of the run).
        fork_retry = await fork.follow_up(["T-1"])
        await eventually(lambda: board_shows(fork_retry.handle, {"1": "in_progress"}), 30)
        await asyncio.sleep(1.5)  # (the server's list has it by now)
        again = await run.follow_up(["T-1"])
        await again.cancel()
        await fork_retry.cancel()


async def test_a_run_cancelled_as_it_starts_ends_cancelled(env: Env):
    """A cancellation that came while the leader's set-up activity ran was taken for a failed
    set-up: the run went on and its agents ran to the end (found by a fork cancelled right
    after it was made)."""
    await env.start_worker()
    async with XSky.connect() as x:
        for n in range(3):  # (the cancellation lands before, during or after the set-up)
            run = await x.run(
                plan(shell("1", "sleep 3; echo ran")), id=f"xsky-early-{n}-{uuid.uuid4().hex[:6]}"
            )
            await run.cancel()
            result = await asyncio.wait_for(run.result(), 60)
            assert result.status == "cancelled", (n, result.status, result.summary)
            assert [a.status for a in result.agents] != ["completed"], result.agents
