"""A task whose agent only asked the person what to do, and got no answer, was not done
(real11): it scored 10, as a success, because the turn had ended."""

from __future__ import annotations

from tests.unit.test_shared_preamble import atoms
from xsky.skills.trajectory import Unit, head_of

# Trimmed from a real Codex 0.101.0 rollout: SublyFi/privacy-x402@349a2af4, codex-session.jsonl
# (https://github.com/SublyFi/privacy-x402, found by real10): the person typed "init" in an
# empty repository, the agent looked around and asked what "init" should produce; the
# session ends there.
QUESTION = (
    "Repo state: empty working tree (only `.git/`), no remote, no commits.\n\n"
    "What do you want `init` to produce?\n\n"
    "1. Stack: `Python package (uv + ruff + pytest) (Recommended)` / `Node+TS (pnpm + eslint "
    "+ vitest)` / `Minimal (README + .gitignore only)`\n"
    "2. Shape: `library` / `CLI` / `notebook/analysis`\n"
    "3. Git: create an initial commit + choose a license (`MIT` / `Apache-2.0` / "
    "`none/private`)?"
)


def units(*items: tuple) -> list[Unit]:
    out, at = [], 0
    for item in items:
        kind, text = item[0], item[1]
        extra = item[2] if len(item) > 2 else {}
        size = max(len(text), 10)
        head = head_of(text, kind)
        out.append(Unit(s=at, e=at + size, kind=kind, head=head, offset=at, end=at + size, **extra))
        at += size
    return out


ASKED = (
    ("user", "init", {"origin": "prompt"}),
    ("assistant", "Repo init can mean a few things. I'm going to inspect the project first."),
    ("tool_call", "ls -la", {"tool": "exec_command"}),
    ("tool_result", "total 0\ndrwxr-xr-x .git", {"tool": "exec_command"}),
    ("assistant", QUESTION),
    ("marker", "", {"marker": "task_complete"}),
)


def test_a_task_that_only_asked_and_got_no_answer_is_not_a_success() -> None:
    (atom,) = atoms(units(*ASKED))
    assert atom["ux_score"] == 2
    assert atom["provenance"]["ux_signals"]["unanswered_question"] == 1


def test_the_answer_in_a_later_delta_closes_the_question() -> None:
    answered = units(
        *ASKED,
        ("user", "1", {"origin": "answer"}),
        ("tool_call", "*** Begin Patch", {"tool": "apply_patch"}),
        ("tool_result", "Success", {"tool": "apply_patch"}),
        ("assistant", "Scaffolded a Python package with uv, ruff and pytest."),
        ("marker", "", {"marker": "task_complete"}),
    )
    whole = atoms(answered)
    assert [a["ux_score"] for a in whole] == [10]
    assert atoms(answered, [6]) == whole  # the answer came in the next delta


def test_a_request_after_the_question_answers_it() -> None:
    # a real Codex 0.120.0 rollout (anmol0b/Trezo-Ai@1bf566ba, codex-session.jsonl): the
    # person typed ".", the agent asked "What do you want me to work on in this repo?", and
    # the person's next prompt was the request — in the same delta or a later one. A request
    # answered by such a question and nothing after it is the open one
    ask = units(
        ("user", "set up the repo", {"origin": "prompt"}),
        ("assistant", "What do you want me to work on in this repo?"),
        ("marker", "", {"marker": "task_complete"}),
    )
    assert atoms(ask)[0]["ux_score"] == 2
    asked = units(
        ("user", ".", {"origin": "prompt"}),
        ("assistant", "What do you want me to work on in this repo?"),
        ("marker", "", {"marker": "task_complete"}),
        ("user", "help me apply for the agentic engineering grant by Superteam"),
        ("assistant", "I'm using the apply-grant skill for this."),
        ("marker", "", {"marker": "task_complete"}),
    )
    assert atoms(asked[:3])[0]["ux_score"] == 10  # "." asked nothing: no task left open
    greeted = units(
        ("user", "hello"),
        ("assistant", "Hi! How can I help you today?"),
        ("marker", "", {"marker": "task_complete"}),
    )
    assert atoms(greeted)[0]["ux_score"] == 10
    whole = atoms(asked)
    assert [a["ux_score"] for a in whole] == [10, 10]
    assert atoms(asked, [3]) == whole


def test_a_question_at_the_end_of_a_long_answer_counts_and_an_offer_does_not() -> None:
    long_question = "I looked at the layout. " + "The repo has no build files yet. " * 30
    us = units(*ASKED[:4], ("assistant", long_question + QUESTION), ASKED[5])
    assert atoms(us)[0]["ux_score"] == 2
    for done in (
        "Done: the README explains the setup. Want me to also add a CONTRIBUTING guide?",
        "It reads the config once at start-up. Does that answer it?",
        "The flag is parsed in cli.py. What else can I help with?",
    ):
        us = units(*ASKED[:4], ("assistant", done), ASKED[5])
        assert atoms(us)[0]["ux_score"] == 10, done
    # a task that changed files and then asks about the next step did something
    edited = units(
        *ASKED[:2],
        ("tool_call", "*** Begin Patch", {"tool": "apply_patch"}),
        ("tool_result", "Success", {"tool": "apply_patch"}),
        ("assistant", "Added a README. Which license do you want, MIT or Apache-2.0?"),
        ASKED[5],
    )
    assert atoms(edited)[0]["ux_score"] == 10


# Trimmed from a real Codex 0.129.0 session: diiviikk5/Xeus@42754914, codex-session.jsonl
# (https://github.com/diiviikk5/Xeus, found by real11): the agent searched the web, then said it
# could not see the person's limits — it scored 10, as a success.
CANNOT_SEE = (
    "I can’t see your account-specific limits from here unless you provide an API/Admin key or "
    "run a command locally.\n\nCurrent ways to check:\n\n- Dashboard: "
    "https://platform.openai.com/settings/organization/limits"
)


def test_an_answer_that_says_it_cannot_do_what_was_asked_is_not_a_success() -> None:
    declined = (
        ("user", "what are my rate limits rn", {"origin": "prompt"}),
        ("tool_call", "web_search: openai rate limits", {"tool": "web_search_call"}),
        ("tool_result", "Rate limits - OpenAI API", {"tool": "web_search_call"}),
        ("assistant", CANNOT_SEE),
        ("marker", "", {"marker": "task_complete"}),
    )
    (atom,) = atoms(units(*declined))
    assert atom["ux_score"] == 2
    assert atom["provenance"]["ux_signals"]["declined"] == 1
    # a finding of work done, or a can't after changes were made, is no refusal
    for answer in (
        "I can't find any bug: the tests pass on main.",
        "I couldn't reproduce it locally; the flaky test passed 20 times.",
        "I cannot see a reason to change the retry count.",
        "Done. I can't see any other place that reads the flag.",
    ):
        us = units(*declined[:3], ("assistant", answer), declined[4])
        assert atoms(us)[0]["ux_score"] == 10, answer
    edited = units(
        declined[0],
        ("tool_call", "*** Begin Patch", {"tool": "apply_patch"}),
        ("tool_result", "Success", {"tool": "apply_patch"}),
        ("assistant", "I can't access your dashboard, so I added a script that prints them."),
        declined[4],
    )
    assert atoms(edited)[0]["ux_score"] == 10


# The apply-grant skill's first command in real Codex rollouts (ShoomanKhatri/SolHawk-Agent
# @67d52e2e, therealjhay/Soul@cf7af20d, …, codex-session.jsonl), trimmed: it writes only to
# its own telemetry file in the home.
TELEMETRY = (
    "_TEL_START=$(date +%s)\nmkdir -p ~/.superstack\n"
    'echo "$_TEL_EVENT" >> ~/.superstack/telemetry.jsonl 2>/dev/null || true'
)


def test_a_task_that_changed_files_by_shell_and_then_asked_did_work() -> None:
    # (real12) a Codex agent changes files through its shell as often as through its
    # apply_patch tool: apply_patch run by exec_command, sed -i, a heredoc into a file; Claude
    # Code's Bash alike (a real 2.1.79 session, yashpunmiya/Solsmile@f1e66f04, ended a commit
    # step with `echo ".claude/" >> .gitignore`). Such a task that then asked about the next
    # step did something: not "only asked"
    for tool, command in (
        ("exec_command", "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: README.md\n+# x"),
        ("shell", "apply_patch *** Begin Patch\n*** Update File: src/app.ts"),
        ("exec_command", "sed -i 's/devnet/mainnet/' src/config.ts"),
        ("exec_command", "cat > pyproject.toml <<'EOF'\n[project]\nname = \"x\"\nEOF"),
        ("exec_command", "mkdir -p src/pkg && touch src/pkg/__init__.py"),
        (
            "Bash",
            'git rm --cached .claude/settings.local.json 2>&1 && echo ".claude/" >> .gitignore',
        ),
        ("shell_command", "Set-Content -Path README.md -Value '# x'"),
    ):
        edited = units(
            *ASKED[:2],
            ("tool_call", command, {"tool": tool}),
            ("tool_result", "Process exited with code 0", {"tool": tool}),
            ("assistant", QUESTION),
            ASKED[5],
        )
        (atom,) = atoms(edited)
        assert atom["ux_score"] == 10, command
        assert atoms(edited, [3]) == [atom]  # the change is kept across a delta's edge
        assert "unanswered_question" not in atom["provenance"]["ux_signals"], command
    # reads, and a skill's write to its own folder in the home, change nothing of the person's
    for tool, command in (
        ("exec_command", "sed -n '1,120p' src/app.ts"),
        ("exec_command", "rg -n 'init' . 2>/dev/null | head -50 > /dev/null"),
        ("exec_command", TELEMETRY),
        ("exec_command", "grep -n '<div>' src/App.tsx"),
    ):
        asked = units(
            *ASKED[:2],
            ("tool_call", command, {"tool": tool}),
            ("tool_result", "Process exited with code 0", {"tool": tool}),
            ("assistant", QUESTION),
            ASKED[5],
        )
        assert atoms(asked)[0]["ux_score"] == 2, command


# A real Claude Code 2.1.81 session (ShoomanKhatri/SolHawk-Agent@67d52e2e, claude-session.jsonl,
# found by real12): "still not working" in a fresh session, and the agent's whole answer; the
# session ends there. Its questions are bold list items, one with an example after it.
NEEDS_CONTEXT = (
    "I need more context to help you. Could you tell me:\n\n"
    "1. **What are you working on?** (feature, bug fix, etc.)\n"
    "2. **What's not working?** (what's the specific issue or error?)\n"
    "3. **What have you tried so far?**\n"
    "4. **What are you seeing?** (error messages, unexpected behavior, etc.)\n\n"
    "You can also check if there's a previous conversation with notes in the memory file at "
    "`/home/shooman/.claude/projects/-home-shooman-Desktop-projects-uniquefutsal/memory/MEMORY.md`"
    " that might help provide context."
)


def test_questions_written_in_markdown_are_questions() -> None:
    # (real12) the question mark sat before '**' or a parenthetical, so the answer was not
    # read as asking, and the task scored 9 — a session whose agent did nothing but ask
    prompt = ("user", "still not working", {"origin": "prompt"})
    end = ("marker", "", {"marker": "turn_end"})
    (atom,) = atoms(units(prompt, ("assistant", NEEDS_CONTEXT), end))
    assert atom["ux_score"] == 2
    assert atom["provenance"]["ux_signals"]["unanswered_question"] == 1
    for asked in ("_Which stack do you want: `uv` or `poetry`?_", "**Which stack?** (uv, poetry)"):
        assert atoms(units(prompt, ("assistant", asked), end))[0]["ux_score"] == 2, asked
    # an offer in bold is still an offer; a report is no question
    for done in ("Fixed the login. **Want me to add a test?**", "Fixed it (see `auth.py`)."):
        assert atoms(units(prompt, ("assistant", done), end))[0]["ux_score"] == 9, done
