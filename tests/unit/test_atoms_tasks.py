"""Atoms are tasks: how a prompt relates to the task in progress, who wrote it, pending
compactions across window edges, and the person's session of a transcript path."""

from __future__ import annotations

import pytest

from xsky.skills.atom_finish import DeltaView, finish, heuristic_ux
from xsky.skills.atoms import keywords
from xsky.skills.drafts import group_offline
from xsky.skills.followups import classify
from xsky.skills.sessions import session_of
from xsky.skills.trajectory import Unit

TASK = ["import", "bank", "statements", "csv", "ledger", "design"]


@pytest.mark.parametrize(
    ("prompt", "follow"),
    [
        ("it's good, but I don't want a registry", "correction"),
        ("don't produce code, design the solution first", "correction"),
        ("not acceptable, revise", "correction"),
        ("no, use Decimal", "correction"),
        ("it's too complex. we send 200 messages a day", "correction"),
        ("why is validate returning a tuple?", "correction"),
        ("use uv instead of pip", "correction"),
        ("also add the duplicate-import test", "refinement"),
        ("what else should I test?", "refinement"),
        ("and keep the upper() call", "refinement"),
        ("oh and skip the header row", "refinement"),
        ("next task: and then deploy it", "new"),
        ("thanks, looks good", "acknowledgement"),
        ("ok, implement it", "continue"),
        # real8: typed after "API Error: 500" ended a turn (a real Claude Code 2.1.178 session,
        # Yael-Peretz/jgive-campaign-donation transcript.jsonl) — it was a task of its own
        # whose intent was "can you retry", its task's prompt absorbed by the task before
        ("can you retry", "continue"),
        ("please retry", "continue"),
        ("retry", "continue"),
        ("retry logic: add exponential backoff to the http client", "new"),
        ("build that design", "same"),
        ("does it handle a BOM at the start of the file?", "same"),
        ("2", "answer"),
        ("Write the README section for the new import command.", "new"),
        ("unrelated: what is our on-call rotation?", "new"),
        ("The login page throws a 500 when the password is empty.", "new"),
    ],
)
def test_a_prompt_after_a_finished_turn_is_read_against_its_task(prompt: str, follow: str) -> None:
    assert classify(prompt, None, TASK, True, False) == follow


def test_who_wrote_a_prompt_decides_before_its_text() -> None:
    assert classify("Write the README", "answer", TASK, True, False) == "answer"
    assert classify("Write the README", "correction", TASK, True, False) == "correction"
    # machine text from an older view (no origin) is never a task
    assert classify("<task-notification>\n<status>completed</status>", None, TASK, True, False) == (
        "machine"
    )


def test_while_the_agent_works_a_request_on_the_same_topic_steers_and_another_is_new() -> None:
    assert classify("add the bank name to each csv row", None, TASK, False, False) == "same"
    assert classify("add a Dockerfile for production", None, TASK, False, False) == "new"


def units(*items: tuple) -> list[Unit]:
    out, at = [], 0
    for item in items:
        kind, head = item[0], item[1]
        extra = item[2] if len(item) > 2 else {}
        size = max(len(head), 10)
        out.append(Unit(s=at, e=at + size, kind=kind, head=head, offset=at, end=at + size, **extra))
        at += size
    return out


DIALOGUE = units(
    ("user", "design a retry policy for the notification sender"),
    ("assistant", "Exponential backoff, 5 attempts."),
    ("user", "it's too complex"),
    ("assistant", "3 attempts."),
    ("marker", "", {"marker": "compaction"}),
    ("compaction", "summary: a retry policy with 3 attempts"),
    ("user", "Add a Prometheus counter for failed notifications"),
    ("assistant", "Added."),
    ("user", "2", {"origin": "answer"}),
)


def cut(us: list[Unit], at: list[int]) -> list[dict]:
    """Atoms of ``us`` split as windows ending before each index of ``at``."""
    md = "".join("." * (u.e - u.s) for u in us)
    view = DeltaView("traj_t", "/raw.jsonl", md, 0, 0, len(md), session="s1")
    atoms: dict[str, dict] = {}
    prior, number, start = None, 1, 0
    for end in [*at, len(us)]:
        made = finish(group_offline(us[start:end], prior), view, number, "offline")
        for a in made:
            atoms[a.atom_id] = a.model_dump(mode="json", exclude={"provenance": {"deltas"}})
        prior = made[-1]
        number = int(prior.atom_id[-4:]) + 1
        start = end
    return list(atoms.values())


def test_a_compaction_cut_from_its_prompt_by_a_window_edge_still_opens_that_prompts_atom() -> None:
    whole = cut(DIALOGUE, [])
    assert [a["intent"] for a in whole] == [
        "design a retry policy for the notification sender",
        "Add a Prometheus counter for failed notifications",
    ]
    assert whole[1]["offset_start"] == DIALOGUE[4].s  # the compaction marker opens it
    assert whole[0]["provenance"]["ux_signals"] == {"corrections": 1}
    for edges in ([5], [6], [4, 5, 6], list(range(1, len(DIALOGUE)))):
        assert cut(DIALOGUE, edges) == whole, edges


def test_machine_units_alone_make_no_atom() -> None:
    quiet = units(("marker", "", {"marker": "session_start"}), ("meta", "<environment_context>"))
    drafts = group_offline(quiet, None)
    assert not any(d.has_content() for d in drafts)


def test_a_subagents_model_written_prompt_gives_its_atom_the_model_origin() -> None:
    us = units(("user", "Search api/ for handlers returning emails", {"origin": "model"}))
    md = "." * us[-1].e
    (atom,) = finish(group_offline(us, None), DeltaView("t", "/r", md, 0, 0, 1), 1, "offline")
    assert atom.provenance.origin == "model"


@pytest.mark.parametrize(
    ("sig", "score"),
    [({"refinements": 1}, 8), ({"refinements": 3}, 7), ({"corrections": 3, "refinements": 2}, 2)],
)
def test_refinements_lower_the_score_less_than_critiques(sig: dict, score: int) -> None:
    assert heuristic_ux(sig) == score


@pytest.mark.parametrize(
    ("kind", "path", "session"),
    [
        ("claude-code", "/h/.claude/projects/-home-a-x/3f2a9c1e-5b7d.jsonl", "3f2a9c1e-5b7d"),
        (
            "claude-code",
            "/h/.claude/projects/-home-a-x/3f2a9c1e-5b7d/subagents/agent-a7c9.jsonl",
            "3f2a9c1e-5b7d",
        ),
        (
            "codex",
            "/h/.codex/sessions/2026/11/28/rollout-2026-11-28T09-14-03-0199a3c2-7e51-7b20-9c4d-1f2e3d4c5b6a.jsonl",
            "0199a3c2-7e51-7b20-9c4d-1f2e3d4c5b6a",
        ),
        ("xsky", "/h/.xsky/transcripts/run-42/coder-a1.jsonl", "run-42"),
    ],
)
def test_the_session_is_the_persons_whatever_the_file(kind: str, path: str, session: str) -> None:
    assert session_of(kind, path) == session


def test_an_atom_of_an_older_version_is_extended_from_what_its_provenance_tells() -> None:
    from xsky.skills.atoms import AtomTask, Provenance

    old = AtomTask(
        atom_id="atom_t_0001",
        traj_id="t",
        offset_start=0,
        offset_end=100,
        intent="fix the cart rounding test",
        summary="Asked: fix the cart rounding test.",
        ux_score=10,
        provenance=Provenance(keywords=["cart", "rounding", "test"], ended="completed"),
    )
    us = units(("user", "no, use Decimal instead"), ("assistant", "Done with Decimal."))
    us = [Unit(**{**u.__dict__, "s": u.s + 100, "e": u.e + 100}) for u in us]
    view = DeltaView("t", "/r", "." * 200, 100, 10, 20)
    (atom,) = finish(group_offline(us, old), view, 2, "offline")
    assert atom.atom_id == "atom_t_0001" and atom.offset_end == us[-1].e
    assert atom.summary.startswith("Asked: fix the cart rounding test. Then:")
    assert atom.provenance.ux_signals == {"corrections": 1} and atom.ux_score == 7


def test_skill_use_is_measured_wherever_the_adapter_puts_it() -> None:
    """On the call (xsky's read_skill), the successful result (Claude Code, Codex) or the load
    of a slash command (a meta line): the atom's used_skills are measured from all three."""
    us = units(
        ("user", "deploy the billing service with helm"),
        ("tool_call", "Skill deploy-helm"),
        ("tool_result", "Launching skill: deploy-helm", {"skill": "deploy-helm"}),
        ("user", "now release the notes for v2.3"),
        ("meta", "Base directory for this skill: …/release-notes", {"skill": "release-notes"}),
        ("tool_call", "read_skill sql-migrate", {"skill": "sql-migrate"}),
        ("assistant", "Done."),
    )
    made = cut(us, [])
    assert [(a["used_skills"], a["provenance"]["used_skills_by"]) for a in made] == [
        (["deploy-helm"], "measured"),
        (["release-notes", "sql-migrate"], "measured"),
    ]


def test_a_skill_loaded_right_after_a_compaction_counts_whatever_the_cuts() -> None:
    """A bare ``/deploy-helm`` after a compaction: its load (a meta unit) waits in the
    compaction's pending run; when the agent goes on, the use is this task's."""
    us = units(
        ("user", "deploy the billing service with helm"),
        ("assistant", "Deploying."),
        ("marker", "", {"marker": "compaction"}),
        ("compaction", "summary: deploying billing"),
        ("meta", "command /deploy-helm"),
        ("meta", "Base directory for this skill: …/deploy-helm", {"skill": "deploy-helm"}),
        ("tool_call", "helm upgrade --install billing"),
        ("tool_result", "Release upgraded"),
        ("assistant", "Done."),
    )
    whole = cut(us, [])
    assert [a["used_skills"] for a in whole] == [["deploy-helm"]]
    for edges in ([5], [6], [3, 5, 7]):
        assert [a["used_skills"] for a in cut(us, edges)] == [["deploy-helm"]], edges


def test_continuing_to_a_named_next_goal_is_a_new_task_and_continuing_the_task_is_not() -> None:
    # real8: a real Claude Code 2.1.178 session (Yael-Peretz/jgive-campaign-donation
    # transcript.jsonl) works through a plan's phases; "continue to phase 2: start with the
    # models …" and "continue to Phase 3: Controller Logic & Routing" were read as "go on"
    # and absorbed by the phase before, so each phase's work was counted under the last one.
    plan = ["render", "sqlite", "deploy", "plan", "phase", "apply", "baseline", "kamal"]
    for prompt in (
        "continue to phase 2: start with the models - do not run migration",
        "continue to Phase 3: Controller Logic & Routing",
    ):
        assert classify(prompt, None, plan, True, False) == "new"
        assert classify(prompt, None, plan, False, False) == "continue"  # while it works: steers
    for prompt in ("continue", "continue with the plan", "proceed to deploy it", "go on"):
        assert classify(prompt, None, plan, True, False) == "continue"


def test_a_short_reply_that_is_no_request_stays_with_its_task() -> None:
    # real9: replies typed after the agent answered were each a task of their own (the
    # classifier's fall-through said "new"): on a real Claude Code 2.1.112 session
    # (leolin84200704/posthog-impact-dashboard) "it should be visible to everyone" and "I can
    # see it in incognito" after the agent said the deployed app redirects to a login; on a
    # real 2.1.178 session (Yael-Peretz/jgive-campaign-donation) "maybe goal_amount should be
    # cast to float …" (a critique) and "great! \ncontinue with phase 3 to run …" (phase 3
    # being the task at hand). Prompts quoted, the tasks' words written for the test.
    deployed = ["check", "https", "dashboard", "streamlit", "app", "deployed", "public"]
    for prompt in (
        "it should be visible to everyone",
        "I can see it in incognito",
        "so what is still missing?",
    ):
        assert classify(prompt, None, deployed, True, False) == "same", prompt
    seeds = ["phase", "models", "migration", "seeds", "goal_amount", "decimal", "progress"]
    critique = "maybe goal_amount should be cast to float before dividing progress_percentage"
    assert classify(critique, None, seeds, True, False) == "correction"
    routing = ["phase", "controller", "logic", "routing"]
    go_on = (
        "great! \ncontinue with phase 3 to run bin/rails db:migrate now so we can smoke-test "
        "before moving to Phase 4 (views)?"
    )
    assert classify(go_on, None, routing, True, False) == "continue"
    assert classify("continue with phase 4", None, routing, True, False) == "continue"
    # what still names a goal of its own
    for prompt in (
        "export a transcript all of this chat",  # ("this" a determiner, three new words)
        "I need a dashboard for the sales metrics",
        "what is our on-call rotation?",
        "there is a new bead for the epic. tackle it",
        "continue to phase 2: start with the models - do not run migration",
        # a Chinese request is one run of Han characters (one keyword): its opening says it
        # is a request ("please add a login page for me", "help me write an export")
        "請幫我加上登入頁面",
        "幫我寫一個匯出功能",
    ):
        assert classify(prompt, None, deployed, True, False) == "new", prompt
    assert classify("應該是都可以看到的", None, deployed, True, False) == "same"  # "should be …"


def test_chinese_corrections_go_ons_and_thanks_in_either_script() -> None:
    # real9: a real Claude Code 2.1.112 session (leolin84200704/posthog-impact-dashboard) is
    # typed in traditional characters; the forms known were simplified only ("不对", "继续"),
    # and "可以" ("fine") opened any prompt beginning "可以幫我…" ("can you help me …") as "go
    # on". Prompts written for the test.
    task = ["dashboard", "streamlit", "impact", "score"]
    for prompt, follow in (
        ("不對，要用 Decimal", "correction"),
        ("不对，要用 Decimal", "correction"),
        ("錯了", "correction"),
        ("還是不行", "correction"),
        ("撤銷", "correction"),
        ("繼續", "continue"),
        ("請繼續", "continue"),
        ("继续", "continue"),
        ("重試", "continue"),
        ("可以", "continue"),
        ("可以。", "continue"),
        ("謝謝", "acknowledgement"),
        ("谢谢", "acknowledgement"),
        ("可以幫我寫一個匯出功能嗎", "new"),  # a request, not "fine"
    ):
        assert classify(prompt, None, task, True, False) == follow, prompt


def test_japanese_corrections_go_ons_and_thanks_and_katakana_topics() -> None:
    # real10: a real Claude Code 2.1.126 session (SublyFi/privacy-x402@349a2af4,
    # claude-session.jsonl) is typed in Japanese. Asked to count the demo's transactions, the
    # agent answered 40; the person asked "本当にそれだけ、、？Depositされた回数って何件？…"
    # ("really only that? how many deposits?") and the answer became 178. That doubt was read
    # as a new task (the first answer scored 9 of 10): no Japanese critique was known, and
    # the task's topic words, in katakana (デモ "demo", トランザクション "transaction"), were
    # no keywords at all. Prompts written for the test, after the session's.
    task = "何回デモのトランザクションが実行されたかを集計したいです"
    words = keywords(task)
    assert "デモ" in words and "トランザクション" in words
    for prompt, follow in (
        ("本当にそれだけ、、？Depositされた回数って何件？", "correction"),
        ("違う、deposit の回数を数えて", "correction"),
        ("そうじゃなくて、失敗したものも含めて", "correction"),
        ("まだ動かない", "correction"),
        ("続けて", "continue"),
        ("続けてください", "continue"),
        ("ありがとう", "acknowledgement"),
        ("ありがとうございます！", "acknowledgement"),
        ("本当にありがとう", "acknowledgement"),  # thanks, not a doubt
    ):
        assert classify(prompt, None, words, True, False) == follow, prompt
    # a follow-up on the same katakana topic is the same task
    assert classify("失敗したトランザクションも集計して", None, words, True, False) != "new"


def test_prompts_in_any_alphabet_have_keywords_so_a_new_goal_starts_a_task() -> None:
    # real10: only ASCII letters and Han were read as words, so a Korean or Russian prompt had
    # no keyword at all and every prompt after a session's first was read as a reply to it
    # ("names nothing of its own") — a whole session one task. Korean prompts of the shape
    # public tools' tests show ("5월 시장 분석해줘", then "보고서 형식으로 정리해줘"); written here.
    task = keywords("5월 시장 분석해줘")  # "analyse the May market"
    assert task == ["시장", "분석해줘"]
    for prompt, follow in (
        ("로그인 페이지 만들어줘", "new"),  # "make a login page"
        ("결제 모듈 테스트 추가해줘", "new"),  # "add tests for the payment module"
        ("시장 분석 결과를 표로", "same"),  # "the market analysis as a table"
        ("아니, 틀렸어", "correction"),  # "no, that's wrong"
        ("아직도 안 돼", "correction"),  # "still doesn't work"
        ("계속", "continue"),
        ("고마워", "acknowledgement"),
    ):
        assert classify(prompt, None, task, True, False) == follow, prompt
    parser = keywords("Исправь ошибку в парсере конфигурации")  # "fix the bug in the config parser"
    assert "парсере" in parser
    assert classify("Добавь страницу входа с паролем", None, parser, True, False) == "new"
    # accented Latin words are whole words, and ASCII ones are read as before
    assert keywords("implémenter le café; fix subly-x402 in vault_config") == [
        "implémenter",
        "café",
        "subly-x402",
        "vault_config",
    ]
