"""xsky's search attributes: one list, used by the dev server, docker compose and `list`."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from cli.runs_cmd import list_query
from xsky.leader.search import SEARCH_ATTRIBUTES, dev_server_flags

ROOT = Path(__file__).resolve().parents[2]


def test_the_dev_server_and_docker_compose_register_every_attribute_with_its_type():
    flags = dev_server_flags()
    assert [flags[i + 1] for i in range(0, len(flags), 2)] == [
        f"{n}={t}" for n, t in SEARCH_ATTRIBUTES.items()
    ]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    script = " ".join(compose["search-attributes"]["command"])
    assert all(f"{n}:{t}" in script for n, t in SEARCH_ATTRIBUTES.items())
    assert (
        compose["worker"]["depends_on"]["search-attributes"]["condition"]
        == "service_completed_successfully"
    )


def test_list_filters_become_one_visibility_query_with_names_quoted():
    args = argparse.Namespace(
        status="waiting",
        waiting=True,
        failed=False,
        plan="it's big",
        query="StartTime > '2026-01-01T00:00:00Z'",
    )
    assert list_query(args) == (
        "WorkflowType='LeaderWorkflow' AND XskyStatus='waiting' AND XskyPending > 0 AND "
        "XskyPlan='it\\'s big' AND (StartTime > '2026-01-01T00:00:00Z')"
    )
