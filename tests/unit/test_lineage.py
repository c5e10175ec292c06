"""A run's lineage (XskyLineage): every run it descends from, registered wherever the
leader's own search attributes are, and the filter that finds every descendant."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from cli.devserver import DevServer
from cli.runs_cmd import list_query
from xsky.lineage import MAX_BYTES, lineage_of

ROOT = Path(__file__).resolve().parents[2]


def test_a_descendant_keeps_every_ancestor_the_first_first():
    assert lineage_of("a", []) == ["a"]
    assert lineage_of("b", ["a"]) == ["a", "b"]
    assert lineage_of("c", ["a", "b"]) == ["a", "b", "c"]
    assert lineage_of("b", ["a", "b"]) == ["a", "b"]  # never twice


def test_a_chain_too_long_for_one_value_keeps_its_first_run_and_the_nearest():
    chain = [f"xsky-nightly-report-{i:04d}-retry-abcdef" for i in range(100)]
    kept = lineage_of("xsky-last", chain)
    assert len(json.dumps(kept)) <= MAX_BYTES
    assert kept[0] == chain[0] and kept[-2:] == [chain[-1], "xsky-last"]
    assert kept[1:-1] == chain[100 - (len(kept) - 2) :]


def test_the_dev_server_and_docker_compose_register_it_as_a_keyword_list(tmp_path: Path):
    cmd = DevServer(db_path=tmp_path / "t.db", port=7999, headless=True).command()
    assert "XskyLineage=KeywordList" in cmd
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert "XskyLineage:KeywordList" in " ".join(compose["search-attributes"]["command"])


def test_list_descendants_finds_the_lineage_or_older_runs_direct_parent_quoted():
    args = argparse.Namespace(
        status=None, waiting=False, failed=False, plan=None, query=None, descendants="it's-1"
    )
    assert list_query(args) == (
        "WorkflowType='LeaderWorkflow' AND (XskyLineage = 'it\\'s-1' OR XskyResumes = 'it\\'s-1')"
    )
