"""The documentation: the site in docs/ builds with strict link and anchor checks, and the README
stays a short front page whose example plan is valid and whose links lead into docs/."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from xsky.plan import dag
from xsky.plan.xml import parse_workflow

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_site_builds_strictly_with_every_link_and_anchor_found(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet"]
        + ["--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # the theme's notice, not a finding
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "tutorial" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert pages and [p for p in pages if f": {p}" not in nav] == []


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 220


def test_the_readme_links_into_docs_and_every_link_leads_to_a_page():
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert "docs/tutorial.md" in links
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_the_readme_example_plan_is_valid():
    xml = re.search(r"```xml\n(.*?)```", README, re.S)
    assert xml, "the README's example plan is gone"
    wf = parse_workflow(xml[1])
    assert len(xml[1].splitlines()) <= 10
    assert dag.validate(wf, known_agents=["browser", "file", "llm", "shell"]) == []


def test_every_whole_plan_the_docs_show_is_valid_xml():
    """A `<workflow>` example a reader copies must parse: xml.md's first one held `--` in a
    comment (`<!-- default; --var topic=… overrides -->`), which XML forbids, so the reference's
    own opening example failed `validate` with 'Double hyphen within comment'."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    shown = [
        (page.name, block)
        for page in pages
        for block in re.findall(r"```xml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        if block.lstrip().startswith("<workflow")
    ]
    assert shown, "no example plan found"
    for name, block in shown:
        try:
            parse_workflow(block)
        except Exception as e:  # noqa: BLE001 - PlanError and the parser's own
            raise AssertionError(f"{name}: an example plan does not parse: {e}") from None
