"""Patch shell-words-as-bash-reads: the leader's own shell decisions (delegated approvals,
"allow for this run" rules) are workflow code, so a run that made them with xsky 0.12.0's
reading of a command replays them as made; the new reading (bash's: a word mixing '…' and
"…$X…" expands at run time) is asked for only where the two decide apart."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from xsky.leader.coordinator.requests import RequestJudge
from xsky.security.delegation import delegation
from xsky.security.shell_parse import read_as_in_v0120, split_command

# A single-quoted {{…}} reference as xsky.plan.variables.render_command renders it.
SED = "sed -i 's/hello/'\"${XSKY_V1}\"'/' f.txt"
RULE = "shell(sed:*)"


def test_the_old_reading_is_kept_for_the_leaders_replays():
    (now,) = split_command(SED)
    assert now.argv[2] == "s/hello/${XSKY_V1}/" and now.expansions.get(2) == "runtime"
    with read_as_in_v0120():
        (before,) = split_command(SED)
    assert before.argv[2] == "s/hello/'\"${XSKY_V1}\"'/" and 2 not in before.expansions
    plain = 'git log --oneline -n 5 && echo "${XSKY_V1}"'
    with read_as_in_v0120():
        kept = split_command(plain)
    assert kept == split_command(plain)  # an ordinary command reads alike


def test_the_two_readings_decide_a_delegated_sed_apart():
    now = delegation("shell", {"command": SED}, [RULE], [], "/ws")
    with read_as_in_v0120():
        before = delegation("shell", {"command": SED}, [RULE], [], "/ws")
    assert now[0] is False and before[0] is True


def judge(patched: bool, asked: list[str]) -> RequestJudge:
    def ask(patch_id: str) -> bool:
        asked.append(patch_id)
        return patched

    judgment: Any = SimpleNamespace(
        delegated=[RULE],
        denied=[],
        programs=True,
        options=SimpleNamespace(delegate=[], workspace="/ws"),
    )
    requests: Any = SimpleNamespace(patched=ask)
    permissions: Any = SimpleNamespace(layers=[])
    return RequestJudge(judgment, None, requests, None, None, permissions)  # type: ignore[arg-type]


def test_a_run_from_before_the_patch_keeps_its_decision_a_new_one_reads_as_bash():
    asked: list[str] = []
    assert judge(False, asked).delegated("shell", {"command": SED}, False)[0] is True
    assert judge(True, asked).delegated("shell", {"command": SED}, False)[0] is False
    assert asked == ["shell-words-as-bash-reads"] * 2
    # a call both readings decide alike asks nothing (no marker in the history)
    asked.clear()
    assert judge(True, asked).delegated("shell", {"command": "sed -n 1p f.txt"}, False)[0]
    assert asked == []


# Patch shell-reading-round-11 (0.12.2): ANSI-C quoting is decoded as bash decodes it — 0.12.1
# took `$'a\tb'` for a word known only at run time, which no delegated rule covers.
ANSI_C = "echo $'a\\tb'"


def judge_of(answers: dict[str, bool], asked: list[str]) -> RequestJudge:
    j = judge(False, asked)

    def ask(patch_id: str) -> bool:
        asked.append(patch_id)
        return answers[patch_id]

    j.requests = SimpleNamespace(patched=ask)  # type: ignore[assignment]
    j.judgment.delegated = ["shell(echo:*)"]
    return j


def test_each_release_replays_the_decision_it_made_and_a_new_run_reads_as_the_newest():
    from xsky.security.shell_parse import read_as_of

    with read_as_of((0, 12, 1)):
        then = delegation("shell", {"command": ANSI_C}, ["shell(echo:*)"], [], "/ws")
    now = delegation("shell", {"command": ANSI_C}, ["shell(echo:*)"], [], "/ws")
    assert then[0] is False and now[0] is True  # the two readings decide it apart
    runs = {  # the patches each run's history holds → its decision
        "new": ({"shell-reading-round-11": True, "shell-words-as-bash-reads": True}, True),
        "0.12.1": ({"shell-reading-round-11": False, "shell-words-as-bash-reads": True}, False),
        "0.12.0": ({"shell-reading-round-11": False, "shell-words-as-bash-reads": False}, False),
    }
    for run, (answers, covered) in runs.items():
        asked: list[str] = []
        decided = judge_of(answers, asked).delegated("shell", {"command": ANSI_C}, False)
        assert decided[0] is covered, run
        assert asked[0] == "shell-reading-round-11", run
    asked = []
    assert judge_of({}, asked).delegated("shell", {"command": "echo hi"}, False)[0]
    assert asked == []  # read alike by every release: no patch asked, no marker
