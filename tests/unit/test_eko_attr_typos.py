"""An Eko <agent> attribute one typo from Eko's own names the one it meant."""

from __future__ import annotations

import pytest

from xsky.plan.xml import parse_workflow_source


@pytest.mark.parametrize(
    ("typo", "meant"), [("dependOn", "dependsOn"), ("dependsOM", "dependsOn"), ("nmae", None)]
)
def test_a_typo_of_an_eko_attribute_is_warned_of_with_the_name_eko_reads(
    typo: str, meant: str | None
) -> None:
    text = f"""<root><name>n</name><agents>
      <agent name="Chat" id="0" dependsOn=""><task>collect prices</task></agent>
      <agent name="Chat" id="1" {typo}="0"><task>write prices.csv</task></agent></agents></root>"""
    said = [r.message for r in parse_workflow_source(text).repairs]
    warned = [m for m in said if f"attribute {typo!r} on an Eko <agent> is not Eko's" in m]
    assert len(warned) == 1, said
    if meant is None:
        assert "did you mean" not in warned[0]
    else:
        assert warned[0].endswith(f"left out — did you mean {meant!r}?")


def test_a_name_that_is_only_near_is_not_taken_for_one() -> None:
    text = """<root><name>n</name><agents>
      <agent name="Chat" id="0" idx="3"><task>t</task></agent></agents></root>"""
    said = [r.message for r in parse_workflow_source(text).repairs]
    assert "attribute 'idx' on an Eko <agent> is not Eko's: left out" in said
