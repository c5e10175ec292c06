"""The live page's graph (cli/ui/static/app.js ``drawGraph``), drawn in Chromium with the page's
own script and no run behind it.

walk11: an edge from an agent to one two levels on was drawn straight across the level between,
under the box of an agent it had nothing to do with (T-1 → T-3 looked like T-1 → T-2 → T-3)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.integration.static_page import static_page

pytestmark = [pytest.mark.integration, pytest.mark.browser]

# For each edge, the points along it that stand inside a box other than its own two ends'.
UNDER_A_BOX = """() => {
  const boxes = [...document.querySelectorAll('#dag .node')].map((g) => {
    const r = g.querySelector('rect'), m = g.transform.baseVal.consolidate().matrix;
    return { task: g.dataset.task, x: m.e, y: m.f, w: r.width.baseVal.value, h: r.height.baseVal.value };
  });
  const out = [];
  for (const edge of document.querySelectorAll('#dag .edge')) {
    const length = edge.getTotalLength();
    for (let i = 0; i <= 200; i++) {
      const p = edge.getPointAtLength((length * i) / 200);
      for (const b of boxes) {
        if (b.task === edge.dataset.from || b.task === edge.dataset.to) continue;
        if (p.x > b.x && p.x < b.x + b.w && p.y > b.y && p.y < b.y + b.h)
          out.push(`${edge.dataset.from} → ${edge.dataset.to} under ${b.task}`);
      }
    }
  }
  return [...new Set(out)];
}"""


@pytest_asyncio.fixture
async def live_page() -> AsyncIterator[Any]:
    async with static_page() as page:
        yield page


async def draw(page: Any, depends: dict[str, list[str]]) -> None:
    await page.evaluate(
        """(depends) => {
          page.agents = new Map(Object.entries(depends).map(([task, deps]) => [task, {
            task, depends: deps, kind: 'noop', agent: 'noop', status: 'pending', shown: 'pending',
            subject: task, note: '' }]));
          drawGraph();
        }""",
        depends,
    )


async def test_an_edge_that_skips_a_level_passes_under_no_other_box(live_page: Any) -> None:
    page = live_page
    await draw(
        page,
        {
            "T-1": [],
            "T-2": ["T-1"],
            "T-3": ["T-1", "T-2"],  # T-1 → T-3 skips T-2's level, on T-2's row
            "T-4": [],
            "T-5": ["T-4"],
            "T-6": ["T-2", "T-5"],
            "T-7": ["T-4", "T-3", "T-1"],  # three levels down, from rows above and below
        },
    )
    assert await page.locator("#dag .edge").count() == 9
    assert await page.evaluate(UNDER_A_BOX) == []
    # every edge still starts at its dependency's box and ends at its dependant's
    ends = await page.evaluate(
        """() => [...document.querySelectorAll('#dag .edge')].map((e) => {
          const at = (t) => document.querySelector(`#dag .node[data-task="${t}"]`)
            .transform.baseVal.consolidate().matrix;
          const a = e.getPointAtLength(0), b = e.getPointAtLength(e.getTotalLength());
          const f = at(e.dataset.from), t = at(e.dataset.to);
          return [a.x - f.e, a.y - f.f, b.x - t.e, b.y - t.f];
        })"""
    )
    assert all(end == [190, 23, 0, 23] for end in ends), ends
