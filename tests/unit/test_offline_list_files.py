"""The offline planner makes "list the files" a file_list of the workspace (walk12: with no
path named it was an llm agent with nothing to read, which the offline provider fails at once —
`plan "1. list the files in the workspace 2. summarise them" --run` failed at T-1)."""

from __future__ import annotations

import pytest

from xsky.plan.offline import classify_step, plan


@pytest.mark.parametrize(
    "step",
    [
        "list the files in the workspace",
        "List the files",
        "Please list the folders",
        "then ls the workspace",
    ],
)
def test_listing_the_files_is_a_file_list_of_the_workspace(step: str) -> None:
    assert classify_step(step) == ("file", {"tool": "file_list", "path": "."})


@pytest.mark.parametrize(
    "step", ["list three ideas", "Make a list of pros and cons", "Summarise the list of files"]
)
def test_other_lists_stay_the_models(step: str) -> None:
    assert classify_step(step) == ("llm", None)


def test_a_named_path_is_listed_as_before() -> None:
    assert classify_step("list the files in notes/a.txt")[1] == {
        "tool": "file_list",
        "path": "notes/a.txt",
    }


def test_the_sentence_plans_a_run_the_offline_provider_can_do() -> None:
    wf = plan("1. list the files in the workspace 2. summarise them", "t")
    first, second = wf.agents
    assert first.name == "file" and first.config == {"tool": "file_list", "path": "."}
    assert second.depends == [first.id]
