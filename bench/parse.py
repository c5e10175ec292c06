"""Benchmark: parse + validate a 10,000-agent plan, against the seed's minidom approach.

A plain plan is read while libxml2 parses it (xsky.plan.plain_plans), no tree built; a plan
with something to report is read from the tree, where every problem has a line and column.

Both sides build the same `Workflow` objects from the same XML text in the same run;
best of N rounds each, the sides in turn within each round (the minimum is the least noisy
estimate on a shared machine).

    python bench/parse.py [--agents 10000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from xml.dom import minidom

from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xsky.kinds import TOOL_AGENT_KINDS
from xsky.plan import dag
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.xml import parse_workflow, workflow_to_xml


def random_plan(n: int, seed: int = 7) -> Workflow:
    rng = random.Random(seed)
    agents = []
    for i in range(n):
        deps = (
            sorted({str(rng.randrange(i)) for _ in range(rng.randint(0, 3))}, key=int) if i else []
        )
        inp = " ".join(f"{{{{agent_{d}_result}}}}" for d in deps) or None
        agents.append(
            WorkflowAgent(
                id=str(i),
                name=rng.choice(TOOL_AGENT_KINDS),
                task=f"Step {i}: process the inputs & write a short report about <topic {i % 97}>",
                input=inp,
                config={"tool": "shell", "command": f"echo {i}"} if i % 5 == 0 else None,
                depends=deps,
            )
        )
    return Workflow(name="bench", task_id=str(uuid.UUID(int=seed)), agents=agents)


def _text(el: minidom.Element, tag: str) -> str | None:
    found = el.getElementsByTagName(tag)
    if not found:
        return None
    return "".join(
        n.data for n in found[0].childNodes if n.nodeType in (n.TEXT_NODE, n.CDATA_SECTION_NODE)
    ).strip()


def parse_minidom(text: str) -> Workflow:
    """The seed's sketch in Python's stdlib: DOM + getElementsByTagName, same objects."""
    doc = minidom.parseString(text)
    wf_el = doc.getElementsByTagName("workflow")[0]
    agents = []
    for el in wf_el.getElementsByTagName("agent"):
        depends = el.getAttribute("depends")
        config = _text(el, "config")
        agents.append(
            WorkflowAgent(
                id=el.getAttribute("id"),
                name=el.getAttribute("name"),
                task=_text(el, "task") or "",
                input=_text(el, "input"),
                config=json.loads(config) if config else None,
                depends=[d.strip() for d in depends.split(",") if d.strip()] if depends else [],
            )
        )
    return Workflow(
        name=wf_el.getAttribute("name"),
        task_id=wf_el.getAttribute("taskId") or str(uuid.uuid4()),
        agents=agents,
    )


def interleaved(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """The best time of each of ``fns``, run in turn round by round: this VM's speed drifts
    within a minute, and one side measured after the other would carry the drift."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            gc.collect()
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()

    wf = random_plan(args.agents)
    text = workflow_to_xml(wf)
    assert parse_workflow(text) == wf and parse_minidom(text) == wf, (
        "both sides must build the same objects"
    )
    assert dag.validate(wf, TOOL_AGENT_KINDS) == []

    data = text.encode()
    ours_parse, ours_total, bare_lxml, mini_parse, mini_total = interleaved(
        [
            lambda: parse_workflow(text),
            lambda: dag.validate(parse_workflow(text), TOOL_AGENT_KINDS),
            lambda: etree.fromstring(data),
            lambda: parse_minidom(text),
            lambda: dag.validate(parse_minidom(text), TOOL_AGENT_KINDS),
        ],
        args.repeat,
    )

    print(
        f"plan: {args.agents:,} agents, {sum(len(a.depends) for a in wf.agents):,} dependencies, {len(text) / 1e6:.2f} MB of XML; best of {args.repeat}"
    )
    print(f"{'':28}{'xsky (lxml)':>14}{'minidom':>14}{'ratio':>9}")
    print(
        f"{'parse → Workflow':28}{ours_parse * 1e3:>11.1f} ms{mini_parse * 1e3:>11.1f} ms{mini_parse / ours_parse:>8.1f}×"
    )
    print(
        f"{'parse + validate':28}{ours_total * 1e3:>11.1f} ms{mini_total * 1e3:>11.1f} ms{mini_total / ours_total:>8.1f}×"
    )
    print(
        f"{'(bare lxml tree, no checks)':28}{bare_lxml * 1e3:>11.1f} ms"
        f"{'':>14}{ours_total / bare_lxml:>8.1f}× of it for parse + validate"
    )
    target = ours_total <= 0.100 and mini_total / ours_total >= 3
    print(f"target (≤ 100 ms and ≥ 3× faster): {'met' if target else 'NOT met'}")


if __name__ == "__main__":
    main()
