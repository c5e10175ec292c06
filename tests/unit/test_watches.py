"""watch made durable (xsky/plan/watches.py): specs, polls and firings, the leader's part."""

from __future__ import annotations

import json

import pytest

from tests.unit.test_leader_core_rules import Shell
from tests.unit.test_loops import complete
from xsky.leader.plans import GROWTH_LISTED
from xsky.plan import watches
from xsky.plan.agent_config import config_problems
from xsky.plan.dag import validate
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.xml import parse_workflow, workflow_to_xml

SPEC = {
    "event": "http",
    "url": "http://127.0.0.1:9/room",
    "every": 1,
    "maxFirings": 2,
    "idleTimeout": 60,
}


def plan(**spec: object) -> Workflow:
    return Workflow(
        name="watch",
        task_id="watch",
        agents=[
            WorkflowAgent(id="open", name="llm", task="open the room"),
            WorkflowAgent(
                id="w",
                name="llm",
                task="answer the new message: {{item}}",
                depends=["open"],
                config={"watch": {**SPEC, **spec}},
            ),
            WorkflowAgent(
                id="sum", name="llm", task="sum up", depends=["w"], input="{{agent_w_result}}"
            ),
        ],
    )


def poll_said(fired: bool, fingerprint: str = "h1", text: str = "new message") -> str:
    return json.dumps({"fired": fired, "hash": fingerprint, "text": text})


def test_a_watch_needs_its_limits_and_what_it_looks_at():
    assert config_problems({"watch": SPEC}) == []
    no_limit = {k: v for k, v in SPEC.items() if k != "maxFirings"}
    (said,) = config_problems({"watch": no_limit})
    assert said.startswith("config watch needs maxFirings") and "never ends" in said
    assert config_problems({"watch": {**SPEC, "url": None}}) == [
        'config watch of event "http" needs a "url" (http or https)'
    ]
    assert "config watch event" in config_problems({"watch": {**SPEC, "event": "gui"}})[0]
    # said plainly, not in pydantic's words
    bad = {**SPEC, "every": "soon", "maxFirings": 0}
    said = " ".join(config_problems({"watch": bad}))
    assert "config watch every must be a number" in said
    assert "config watch maxFirings must be at least 1" in said
    assert "Input should" not in said and "Value error" not in said
    no_event = {k: v for k, v in SPEC.items() if k != "event"}
    assert config_problems({"watch": no_event})[0].startswith(
        "config watch needs event: one of dom, http, file, timer"
    )
    assert validate(plan(), ["llm"]) == []  # {{item}} is a watch's firing's
    assert parse_workflow(workflow_to_xml(plan())) == plan()


def test_a_watch_polls_fires_and_polls_on_until_its_limit_then_gathers():
    wf = watches.start(plan(), "w")
    assert [a.id for a in wf.agents] == ["open", "w.poll[1]", "w", "sum"]
    first = wf.agent("w.poll[1]")
    assert (
        first.config is not None and first.config["tool"] == "watch" and "since" not in first.config
    )
    assert first.depends == ["open"] and wf.agent("w").depends == ["w.poll[1]"]
    wf, line = watches.polled(wf, "w.poll[1]", poll_said(True, "h1", "hello"))
    assert line == "watch w: firing 1 (w[1]), watching on (w.poll[2])"
    firing = wf.agent("w[1]")
    assert (firing.item, firing.depends, firing.config) == ("hello", ["w.poll[1]"], None)
    second = wf.agent("w.poll[2]")
    assert second.config is not None and second.config["since"] == "h1"
    assert wf.agent("w").depends == ["w.poll[2]", "w[1]"]
    wf, line = watches.polled(wf, "w.poll[2]", poll_said(True, "h2", "again"))
    assert line == "watch w ended after 2 firing(s): 2 firing(s), its limit"
    assert "w.poll[3]" not in {a.id for a in wf.agents}
    gather = wf.agent("w")
    assert gather.config == {
        "tool": "gather",
        "items": ["{{agent_w[1]_result}}", "{{agent_w[2]_result}}"],
    }
    assert gather.depends == ["w[1]", "w[2]"]
    assert validate(wf, ["llm"]) == [] and parse_workflow(workflow_to_xml(wf)) == wf


def test_a_watch_that_sees_no_change_ends_with_no_firing_and_one_that_does_not_loop_after_one():
    quiet, line = watches.polled(watches.start(plan(), "w"), "w.poll[1]", poll_said(False))
    assert line == "watch w ended after 0 firing(s): no change within 60s"
    assert quiet.agent("w").config == {"tool": "gather", "items": []}
    once, line = watches.polled(watches.start(plan(loop=False), "w"), "w.poll[1]", poll_said(True))
    assert line.endswith("it does not loop") and once.agent("w").depends == ["w[1]"]


def test_the_leader_runs_polls_and_firings_as_agents_and_ends_the_watch_at_its_limit():
    shell = Shell(plan())
    shell.loop()
    complete(shell, "open", "opened")
    assert list(shell.running) == ["w.poll[1]"]
    complete(shell, "w.poll[1]", poll_said(True, "h1", "hi"))
    assert sorted(shell.running) == ["w.poll[2]", "w[1]"]  # it fires and watches on at once
    rendered, _ = shell.core.inputs.render("w[1]")
    assert rendered.task == "answer the new message: hi"
    poll, _ = shell.core.inputs.render("w.poll[2]")
    assert (
        poll.config is not None and poll.config["since"] == "h1" and poll.config["waitFirst"] == 0
    )
    complete(shell, "w[1]", "answered hi")
    complete(shell, "w.poll[2]", poll_said(True, "h2", "ho"))
    assert list(shell.running) == ["w[2]"]  # the limit: no third poll
    complete(shell, "w[2]", "answered ho")
    gathered, _ = shell.core.inputs.render("w")
    assert gathered.config == {"tool": "gather", "items": ["answered hi", "answered ho"]}
    reasons = [v.reason for v in shell.core.plans.state.history]
    assert "watch w: watching" in reasons and reasons[-1].startswith(
        "watch w ended after 2 firing(s)"
    )


def test_an_eko_watch_of_a_page_becomes_the_steps_that_reach_it_and_a_durable_watch():
    from pathlib import Path

    from xsky.plan.loops import lower
    from xsky.plan.xml import parse_workflow_source

    fixture = Path(__file__).parents[1] / "fixtures" / "eko" / "04-discord-watch.xml"
    wf, said = lower(parse_workflow_source(fixture.read_text()).workflow)
    assert said == [
        "watch of agent 0 made durable: 0.page → 0 (limits: every 2, maxFirings 10, "
        "minInterval 5, idleTimeout 3600)"
    ]
    page, watcher = wf.agents
    assert [s.text for s in page.steps] == ["Open Discord page", "Find and open Group A"]
    assert "answer with only the URL" in page.task
    spec = watches.spec_of(watcher)
    assert spec is not None and spec.url == "{{agent_0.page_result}}" and spec.loop
    assert [s.text for s in watcher.steps] == [
        "Analyze message content",
        "Automatic reply to new messages",
    ]
    assert watcher.depends == ["0.page"] and validate(wf, ["browser"]) == []
    assert lower(wf) == (wf, [])


def test_a_person_or_a_system_fires_a_watch_by_skipping_its_poll_with_what_happened():
    from xsky.leader.state import SkipTaskRequest

    shell = Shell(plan())
    shell.loop()
    complete(shell, "open", "opened")
    assert list(shell.running) == ["w.poll[1]"]
    req = SkipTaskRequest(task_id="T-w.poll[1]", result="the boss wrote: ship it")
    shell.core.checks.skip(req)
    shell.apply(shell.core.people.skip(req, shell.now)[1])  # the poll is stopped
    shell.core.poll_ended("w.poll[1]", shell.now)
    shell.acknowledge_stops()
    assert sorted(shell.running) == ["w.poll[2]", "w[1]"]
    rendered, _ = shell.core.inputs.render("w[1]")
    assert rendered.task == "answer the new message: the boss wrote: ship it"
    nxt = shell.core.agents["w.poll[2]"].config or {}
    assert "since" not in nxt  # it takes its first look as the baseline


def test_a_watch_ends_when_what_changed_meets_its_condition():
    wf = watches.start(plan(until=r"\bclosed\b", maxFirings=10), "w")
    wf, line = watches.polled(wf, "w.poll[1]", poll_said(True, "h1", "still open"))
    assert "w.poll[2]" in {a.id for a in wf.agents}
    wf, line = watches.polled(wf, "w.poll[2]", poll_said(True, "h2", "The room is CLOSED now"))
    assert (
        line
        == "watch w ended after 2 firing(s): what changed matches its condition (until '\\\\bclosed\\\\b')"
    )
    assert "w.poll[3]" not in {a.id for a in wf.agents} and wf.agent("w").depends == [
        "w[1]",
        "w[2]",
    ]
    assert (
        "until is not a regular expression" in config_problems({"watch": {**SPEC, "until": "("}})[0]
    )


def watched(firings: int, fold: bool) -> Shell:
    """A run whose watch fired ``firings`` times (its limit), every firing answered."""
    shell = Shell(plan(maxFirings=firings))
    shell.core.growth.fold = fold  # patch plan-growth-folded (the workflow says, per execution)
    shell.loop()
    complete(shell, "open", "opened")
    for k in range(1, firings + 1):
        complete(shell, f"w.poll[{k}]", poll_said(True, f"h{k}", f"message {k}"))
        complete(shell, f"w[{k}]", f"answered {k}")
    return shell


def test_a_long_watch_keeps_a_short_plan_history_whose_newest_version_holds_the_plan():
    folded, kept = watched(60, fold=True), watched(60, fold=False)
    # the same run either way: the same plan, the same results
    assert folded.core.plans.plan == kept.core.plans.plan
    assert folded.core.plans.version == kept.core.plans.version == 62  # v1, watching, 60 more
    history = folded.core.plans.state.history
    mine = [v for v in history if v.grown_by == "watch w"]
    assert len(mine) == GROWTH_LISTED and len(kept.core.plans.state.history) == 62
    first, fold, *rest = mine
    assert first.reason == "watch w: watching" and first.version == 2
    assert (fold.folded, fold.folded_from, fold.version) == (42, 3, 44)
    assert fold.reason.startswith("watch w: v3–v44, 42 versions folded")
    assert [v.version for v in rest] == list(range(45, 63))  # the newest, each listed
    assert rest[-1].reason.startswith("watch w ended after 60 firing(s)")
    # only the newest keeps its XML, and it is the plan in force
    assert [v.version for v in history if v.xml] == [1, 62]
    assert parse_workflow(history[-1].xml) == folded.core.plans.plan
    size = len(folded.core.plans.state.model_dump_json())
    unfolded = len(kept.core.plans.state.model_dump_json())
    assert size * 10 < unfolded, (size, unfolded)  # grows with the firings, not their square


def test_a_replan_between_a_watchs_versions_keeps_its_own_xml():
    shell = Shell(plan(maxFirings=3))
    shell.core.growth.fold = True
    shell.loop()
    complete(shell, "open", "opened")
    complete(shell, "w.poll[1]", poll_said(True, "h1", "one"))
    complete(shell, "w[1]", "answered 1")
    replanned = shell.core.plans.plan.model_copy(update={"name": "renamed"})
    shell.core.apply_plan(replanned, "a person's replan", shell.now)
    complete(shell, "w.poll[2]", poll_said(True, "h2", "two"))
    history = shell.core.plans.state.history
    (replan,) = [v for v in history if v.reason.startswith("a person's replan")]
    assert replan.xml and replan.grown_by is None  # not the watch's: never folded or emptied
    assert [v.version for v in history if v.xml] == [1, 4, 5]  # the watch's newest: v5


def test_a_pages_watch_inside_a_forEach_is_a_problem_with_the_fix_not_a_broken_watch():
    """Lowered, each item watched the list's gathered result as if it were a URL."""
    from xsky.errors import WorkflowValidationError
    from xsky.plan.files import check_plan_source

    text = """<root><name>w</name><agents><agent name="Browser" id="0" dependsOn=""><task>t</task>
      <nodes><node output="pages">list the pages</node><forEach items="pages">
        <node>open the page</node>
        <watch event="dom" loop="true"><description>new comments</description>
          <trigger><node>reply</node></trigger></watch>
      </forEach></nodes></agent></agents></root>"""
    with pytest.raises(WorkflowValidationError) as e:
        check_plan_source(text.encode(), known_agents=["browser", "llm", "shell", "file"])
    assert "inside a <forEach> cannot be made durable" in e.value.problems[0].message
