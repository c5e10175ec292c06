"""The offline provider: extractive answers and rule-based plans, deterministic and labelled."""

from __future__ import annotations

from xsky.kinds import TOOL_AGENT_KINDS
from xsky.plan import dag, offline
from xsky.plan.models import Workflow


def test_answers_are_labelled_extractive_and_deterministic():
    text = (
        "Temporal stores a history of events. Workers replay it after a crash. "
        "Bananas are yellow. Activities retry with bounded policies."
    )
    first = offline.answer("Summarize how Temporal survives a crash in one sentence", text)
    assert first == offline.answer("Summarize how Temporal survives a crash in one sentence", text)
    assert first.startswith("[offline provider] ") and first.count(".") == 1
    body = first.removeprefix("[offline provider] ")
    assert body in text  # extractive: nothing invented


def test_sentence_count_follows_the_task():
    text = "One is here. Two is here. Three is here. Four is here. Five is here."
    assert offline.wanted_sentences("answer in 2 sentences") == 2
    assert offline.wanted_sentences("in a single sentence") == 1
    assert offline.wanted_sentences("summarize") == 3
    assert offline.answer("list 4 points", text).count(".") == 4


def test_no_input_says_so_instead_of_inventing():
    out = offline.answer("What is the capital of France?", None)
    assert out.startswith("[offline provider] No input") and "Paris" not in out


def test_plans_numbered_steps_into_the_expected_agents():
    wf = offline.plan(
        "1. Open https://example.com/news 2. Run `wc -l notes.txt` 3. Summarize the findings 4. Save the summary to report.md",
        "t",
    )
    assert [(a.id, a.name, a.depends) for a in wf.agents] == [
        ("1", "browser", []),
        ("2", "shell", ["1"]),
        ("3", "llm", ["2"]),
        ("4", "file", ["3"]),
    ]
    assert wf.agents[0].config == {"tool": "browser_navigate", "url": "https://example.com/news"}
    assert wf.agents[1].config == {"tool": "shell", "command": "wc -l notes.txt"}
    assert wf.agents[2].input == "{{agent_1_result}}\n\n{{agent_2_result}}"
    assert wf.agents[3].config == {
        "tool": "file_write",
        "path": "report.md",
        "content": "{{agent_3_result}}",
    }
    assert wf.name.startswith("[offline provider]") and dag.validate(wf, TOOL_AGENT_KINDS) == []


def test_plans_parallel_steps_when_the_text_says_so():
    wf = offline.plan(
        "Fetch https://a.example and https://b.example in parallel, then compare both pages.", "t"
    )
    assert [(a.id, a.name, a.depends) for a in wf.agents] == [
        ("1", "browser", []),
        ("2", "browser", []),
        ("3", "llm", ["1", "2"]),
    ]
    wf = offline.plan(
        "In parallel: 1. read data.csv 2. run `uname -a` 3. Combine everything into a report", "t"
    )
    assert [a.depends for a in wf.agents] == [[], [], ["1", "2"]]


def test_plans_then_and_sentences_as_a_chain():
    wf = offline.plan("Explain durable execution. Then give an example.", "t")
    assert [(a.task, a.depends) for a in wf.agents] == [
        ("Explain durable execution", []),
        ("Give an example", ["1"]),
    ]


def test_replan_without_a_prompt_keeps_the_plan_and_with_one_appends_after_the_leaves():
    current = offline.plan("1. read a.txt 2. summarize it", "t")
    same = offline.replan(current, None)
    assert [a.id for a in same.agents] == ["1", "2"] and same.modified
    more = offline.replan(current, "then run `echo done`")
    assert [(a.id, a.depends) for a in more.agents][-1] == ("3", ["2"])
    assert isinstance(more, Workflow) and dag.validate(more, TOOL_AGENT_KINDS) == []


def test_link_labels_and_menus_are_not_taken_for_sentences():
    page = (
        "# Durable agents\nURL: http://x/index.html\n\nDurable agents\n\n"
        "Temporal records every step of a workflow in an event history.\n\n"
        "Activities are retried with a bounded policy, and a heartbeat timeout notices a dead worker.\n\n"
        "Large results are stored outside the history.\n\n"
        "Release data\nTemporal documentation\n\n## Links\n- Release data → http://x/data.json"
    )
    out = offline.answer("Summarize in two sentences how durability works", page)
    assert "Release data" not in out and "documentation" not in out
    assert out.count(".") == 2


def test_dependencies_results_are_read_without_their_labels_heading_and_notes():
    from xsky.plan import dependency_text

    given = "\n".join(
        [
            dependency_text.HEADING,
            "",
            dependency_text.label("T-1", "browser", "Read the page"),
            "Example Domain This domain is for documentation examples without permission.",
            "… (300 more characters in xsky://run/a)",
            "",
            dependency_text.label("T-2", "llm", "Summarize"),
            "[offline provider] Example Domain This domain is for documentation examples without permission.",
            "",
            dependency_text.label("T-3", "file", "write x"),
            dependency_text.NO_RESULT,
        ]
    )
    answer = offline.answer("Summarize the page in one sentence", given)
    assert answer == (
        "[offline provider] Example Domain This domain is for documentation examples without permission."
    )
    # Nothing but scaffolding: nothing to answer from (the offline llm agent then fails).
    empty = "\n".join(
        [dependency_text.HEADING, "", dependency_text.label("T-3", "file", "x"), "(no result)"]
    )
    assert dependency_text.content(empty) == ""
    assert "No input to work from" in offline.answer("Summarize", empty)
    # A plain input is left as it is.
    assert dependency_text.content("[T-1 · a · b]\nkept") == "[T-1 · a · b]\nkept"


def test_a_write_step_writes_the_words_it_says_and_otherwise_the_results_before_it():
    from xsky.plan.models import Workflow, WorkflowAgent

    wf = Workflow(
        name="x", task_id="x", agents=[WorkflowAgent(id="1", name="llm", task="find the news")]
    )
    said = {
        "then write the word done into result.txt": "done",
        'write "all good" to notes.txt': "all good",
        "write the summary to out.md": "{{agent_1_result}}",
    }
    for prompt, content in said.items():
        written = offline.replan(wf, prompt).agents[-1]
        assert written.config is not None and written.config["tool"] == "file_write", prompt
        assert written.config["content"] == content, prompt


def test_a_write_step_writes_only_to_the_file_it_names_as_where_it_goes():
    """ "write a summary of data.txt" overwrote data.txt with the summary (a newcomer's
    replan lost the file's lines): a path the step reads from is not where it writes."""
    from xsky.plan.offline import classify_step

    assert classify_step("write a summary of data.txt") == ("llm", None)
    assert classify_step("then write a summary of notes.txt")[0] == "llm"
    assert classify_step("Write a summary of the errors in server.log")[0] == "llm"
    assert classify_step("Write the errors in server.log to errors.txt")[1] == {
        "tool": "file_write",
        "path": "errors.txt",
    }  # "to x" is where it goes, over "in y"
    assert classify_step("Save a summary of the meeting in notes.md")[1] == {
        "tool": "file_write",
        "path": "notes.md",
    }
    assert classify_step("Write the addresses to contacts.txt")[1] == {
        "tool": "file_write",
        "path": "contacts.txt",
    }  # "addresses" is no "add": it writes, not appends
    for step, path in [
        ("write a summary of notes.txt to summary.md", "summary.md"),
        ("save the result to out.txt", "out.txt"),
        ("write the lines from data.csv to a file named out.csv", "out.csv"),
        ("create notes.md", "notes.md"),
        ("record the price in prices.csv", "prices.csv"),
        ("write 'hi' to `a.txt`", "a.txt"),  # a backticked path is a file, not a command
    ]:
        kind, config = classify_step(step)
        assert kind == "file" and config == {"tool": "file_write", "path": path}, step
    # appending keeps what is there
    assert classify_step("append the line to log.txt")[1] == {
        "tool": "file_write",
        "path": "log.txt",
        "append": True,
    }


def test_a_numbered_list_in_a_prompt_does_not_cut_its_intent_at_the_first_number():
    # "…: 1. fix the login bug 2. add a test" cut at "2." left the intent "…1. fix the login
    # bug 2." (real7: a real Claude Code 2.1.38 prompt).
    from xsky.skills.atom_finish import sentences

    prompt = (
        "Work through these now: 1. fix the login bug in the auth module 2. add a regression "
        "test for it 3. push the branch. Report what you changed."
    )
    cut = sentences(prompt, 110)
    assert not cut.endswith((" 2.", " 3.")), cut
    assert sentences("Fix the login bug in the auth module. Then add a test and push.", 45) == (
        "Fix the login bug in the auth module."
    )


def test_one_numbered_step_is_one_agent_not_its_number_and_the_step():
    """`plan "1. Print hello"` made two agents, the first with the task "1" (walk10)."""
    for request in ("1. Print hello", "Step 1. Print hello", "1. Print hello."):
        wf = offline.plan(request, "t")
        assert [a.task for a in wf.agents] == ["Print hello"], (request, wf.agents)
    steps, _ = offline.split_steps("Fetch the page. Then summarize it")
    assert steps == ["Fetch the page", "summarize it"]
    # a number alone is still the request when nothing else is
    assert offline.split_steps("42")[0] == ["42"]
