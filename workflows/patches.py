"""Every ``workflow.patched`` id of xsky's workflows: what it changed, since when, and when it
may go.

A change to workflow code that running executions may replay goes behind a patch, so a
history recorded before the change still takes the old branch and one recorded after takes
the new (temporal.md, "Versioning"). Each patch is registered here and called through
:func:`patched`, which refuses an unregistered id; ``tests/unit/test_patches.py`` checks that
every registered id is used in ``workflows/`` and every id used is registered, so the list
below is the whole truth about which compatibility branches the code still carries.

Retiring a patch takes two releases (the SDK's ``deprecate_patch`` protocol): once no
execution older than ``since`` can still be open, replace ``patched(id)`` by
``workflow.deprecate_patch(id)`` and keep only the new branch; one release later delete that
call and move the id to ``RETIRED``.

Release ``v0.2.0`` collapsed the fifteen patches of the unreleased 0.1 line (no release had
shipped, so no execution outside a developer's dev server could hold the old branches): their
new behaviour became the only behaviour and their ids are ``RETIRED``. An id is never reused:
a history that recorded its marker would take a branch it was never written for.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow


@dataclass(frozen=True)
class Patch:
    what: str
    """The behaviour the patched branch has, in one sentence."""
    since: str
    """The first release whose workflow code takes the patched branch."""
    delete_when: str
    """The condition under which the old branch, then the marker, may go."""


PATCHES: dict[str, Patch] = {
    "plan-growth-folded": Patch(
        what="a forEach's or a watch's plan versions keep their XML only in the newest of them, "
        "and at most 20 entries in the plan's history (the first, one counting those folded, the "
        "newest); before, each of a watch's up to 1,000 versions kept the whole plan's XML (large "
        "ones stored through an activity each)",
        since="v0.8.0",
        delete_when="no run started before v0.8.0 is still open (their loops' and watches' "
        "versions keep every XML, and store each large one)",
    ),
    "paired-test": Patch(
        what="a skill version SkillEditAgent writes is tested with and without it on held-out "
        "atoms (activity paired_test) before anything else: a first version stays on baby until it "
        "beats no skill (then publish_first), a staging version that does not beat main is "
        "discarded, and the live canary never promotes a version without a passing paired test",
        since="v0.7.0",
        delete_when="no skill entity started before v0.7.0 is still open (their edits publish a "
        "first version at once and their canary promotes on UX scores alone)",
    ),
    "replan-review-deadline": Patch(
        what="the review an automatic replan asks for (it gives shell, Python or network tools to "
        "new agents) has the run's review_timeout and review_timeout_action, as a first plan's "
        "review has; before, it waited for approve_plan for ever",
        since="v0.2.1",
        delete_when="no run started before v0.2.1 is still open (runs of v0.2.0 whose automatic "
        "replan waits for review replay the old branch)",
    ),
    "deterministic-failures-final": Patch(
        what="a deterministic failure (the activity's detail {failure: deterministic}: a non-zero exit, an "
        "HTTP 4xx, a refused argument) is final: no automatic replan follows it unless "
        'RunOptions.replan_deterministic is set; and an agent\'s <config>{"retries": N} adds N '
        "tries to its retry policy",
        since="v0.3.0",
        delete_when="no run started before v0.3.0 is still open (their failed agents were "
        "replanned automatically whatever the failure)",
    ),
    "requests-end-with-run": Patch(
        what="a run that ends (cancelled, ended, failed) withdraws its pending requests and a "
        "waiting review, so XskyPending drops to 0 and `list --waiting` no longer shows it",
        since="v0.3.0",
        delete_when="no run started before v0.3.0 is still open",
    ),
    "cancelled-stays-cancelled": Patch(
        what="a replan keeps a task a person cancelled cancelled while the new plan defines it "
        "as before (before: every cancelled task went back to pending)",
        since="v0.3.0",
        delete_when="no run started before v0.3.0 is still open",
    ),
    "flat-retry-backoff": Patch(
        what="run_agent's retry policy is flat (FLAT_RETRY between any two attempts) and the "
        "error backoff travels in AgentInput.error_backoff, waited by the attempt after an error: "
        "an attempt lost with its worker is retried at once; before, Temporal backed off every "
        "retry alike, so lost-worker retries waited up to maximum_interval",
        since="v0.3.0",
        delete_when="no run started before v0.3.0 is still open (their agents' attempts are "
        "scheduled with the backoff policy on replay)",
    ),
    "local-results-next-task": Patch(
        what="a local activity's result is decided on only in a workflow task later than the "
        "one that scheduled it: once a 1 ms timer started with the local activities has fired "
        "(a history event): the SDK may record a local result in the task that scheduled it while the "
        "workflow sees it only in the next (a query answered meanwhile), and a replay sees it "
        "in the first; before, the result was decided on when seen",
        since="v0.3.1",
        delete_when="no run started before v0.3.1 with localTools on is still open",
    ),
    "leader-coordinator": Patch(
        what="the leader consults its coordinator (the coordinate activity) on model agents' "
        "results, questions, tool requests, stalls past the nudge and the goal once every task "
        "is done, and applies its verdicts within the person's bounds; mechanical rules send "
        "back empty or unfinished answers; approvals within delegated rules are given by the "
        "leader; before, every result was taken as it came and every request waited for a person",
        since="v0.4.0",
        delete_when="no run started before v0.4.0 is still open (their histories hold no "
        "coordinate activities)",
    ),
    "budgets": Patch(
        what="a run with a budget (RunOptions.budget, <workflow budget>, set_budget) reserves each "
        "agent's share before dispatch, hands it to the agent, settles what agents used and "
        "pauses dispatch with an escalation when the budget is spent; asked only by a run that "
        "has a budget, so runs without one issue the commands they did",
        since="v0.4.0",
        delete_when="never needed for old runs (none had a budget); may go with the next "
        "collapse of patches",
    ),
    "mcp-tools-privileged": Patch(
        what="an automatic replan that gives a new or changed agent tools of MCP servers (its "
        "role's mcp__… tools, or a direct mcp__… call) waits for approve_plan, as one that "
        "gives it shell, Python or network tools does; before, only those did",
        since="v0.4.0",
        delete_when="no run started before v0.4.0 is still open (an automatic replan of theirs "
        "that hands out MCP tools replays without the review)",
    ),
    "refusals-heard": Patch(
        what="the signals check their payloads themselves: a malformed one (not a JSON object, an "
        "unknown field, a wrong type, a text over its cap: pause null, pause {frobnicate: true}, a "
        "nudge of 1.5 MiB) is refused, counted on the board and written in the permission log "
        "instead of dropped or taken; each dispatch gets a report token in its input, and a "
        "report_progress without it is refused; before, the SDK dropped undecodable payloads, "
        "pause null paused, and any report was taken",
        since="v0.4.0",
        delete_when="no run started before v0.4.0 is still open",
    ),
    "agent-input-by-reference": Patch(
        what="an attempt's input larger than INPUT_BUDGET (xsky/leader/limits.py) is written to "
        "the artifact store first (leader_put activities) and travels as a reference; before, it "
        "was scheduled whole, and one over Temporal's payload limit failed every workflow task",
        since="v0.4.0",
        delete_when="no run started before v0.4.0 is still open (their oversized inputs never "
        "got scheduled, so no history holds the old branch; the id may go once v0.4.0 is the oldest "
        "release still running)",
    ),
    "state-per-execution": Patch(
        what="a run continued as new stores its state under the next execution's number "
        "(state-N-<digest>, N carried in the state) and the next execution removes the older "
        "states once it has read its own (leader_drop); before, every execution's state was "
        "named state-1-<digest> (the count was not carried) and none was removed",
        since="v0.4.0",
        delete_when="no run started before v0.4.0 is still open",
    ),
    "workspace-hosts": Patch(
        what="with workers that share an object store and no disk (leader_setup says so), a run's "
        "workspace agents go to the task queue of the host that holds its workspace, chosen by a "
        "claim_workspace activity when the first one starts, and chosen again when that host is "
        "lost (an attempt not taken within its schedule-to-start timeout, and host_alive finds no "
        "worker there); asked only by runs whose leader's worker has such a store",
        since="v0.4.0",
        delete_when="no run started before v0.4.0 is still open (runs of an older worker never "
        "ask it: they run every agent on its kind's queue)",
    ),
    "leader-budget-holds": Patch(
        what="the leader's own model calls hold a share of a run's budget while they run, as "
        "agents' dispatches do: a consultation of the coordinator and a planner call are made "
        "only with room for them (their share travels in their input and the activity checks it "
        "before every request), held shares count when agents are admitted, and a call the "
        'budget has no room for is skipped and said ("not checked (budget)"); before, the '
        "coordinator was consulted while one reservation's worth was left and its calls were "
        "only counted after they were made",
        since="v0.5.0",
        delete_when="no run started before v0.5.0 is still open",
    ),
    "delegation-program-forms": Patch(
        what="a delegated rule lets the leader approve a shell call only when no part of it runs a "
        "program, loads code or writes what it does not name (sed e, awk system(), tar "
        "--checkpoint-action, git -c, env, xargs …), takes an option the checker does not know, "
        "or names a place whose files run programs (.git/, ~, .npmrc …): such a call is left to a "
        "person with the reason; before, a rule's words alone decided (shell(sed:*) covered sed e)",
        since="v0.5.0",
        delete_when="no run started before v0.5.0 is still open (their delegated approvals were "
        "decided by the rules' words alone)",
    ),
    "local-tools-off": Patch(
        what="RunOptions.local_tools is ignored: an instant no-op runs as an activity like every "
        "agent; before, it ran as a local activity whose result waited for a 1 ms timer (patch "
        "local-results-next-task) that the server fires about a second late, so a chain of them "
        "took a second a step",
        since="v0.5.0",
        delete_when="no run started before v0.5.0 with localTools on is still open; then the "
        "local path (Attempts' local activities, settle_local, the nudge timer) goes with "
        "local-results-next-task",
    ),
    "large-state-as-payload": Patch(
        what="a state over STATE_IN_HISTORY_MAX (2 MiB) goes to the next execution as its input, "
        "which the worker's External Storage writes to the store (the history holds a claim); "
        "before, it went in parts through leader_put and leader_get, whose inputs and results "
        "stood in the history, so a 30,000-agent run filled the 50 MB history",
        since="v0.5.0",
        delete_when="no run started before v0.5.0 with a state over 2 MiB is still open",
    ),
    "final-board": Patch(
        what="a large run (over INLINE_AGENTS agents) stores its whole board as it ended and "
        "names it in RunResult.board_ref, so `status` of an ended run reads the store instead "
        "of a worker replaying the run; before, only the results were stored",
        since="v0.5.0",
        delete_when="no run started before v0.5.0 is still open (their end schedules one store "
        "write fewer on replay)",
    ),
    "final-blobs-by-reference": Patch(
        what="where the leader's worker has External Storage (LeaderSetup.payloads_by_reference), "
        "a large run's results and whole board are stored at its end in parts of "
        "STORED_PART_CHARS (1,000,000 characters), over External Storage's threshold, so the "
        "history holds claims; before, in parts of PART_CHARS (200,000), just under it, which "
        "stood in the last execution's history (7.9 of its 8.0 MiB at 10,000 agents)",
        since="v0.5.0",
        delete_when="no run started before v0.5.0 is still open (their end writes smaller parts)",
    ),
    "watch-description-whole": Patch(
        what="a native watch's <description> that holds elements, in XML the leader reads (a "
        "replan's, a large plan's stored text), is kept whole as text (xsky/plan/steps.inner_xml); "
        "before, it was cut at its first element, and a replan's plan compared with the run's by "
        "what it was cut to",
        since="v0.11.5",
        delete_when="no run that took a replan's XML before v0.11.5 is still open",
    ),
    "budget-wait-passes-free-tasks": Patch(
        what="when the run's budget makes a ready task wait, the ready tasks behind it that spend "
        "nothing of it (direct tools) still start; before, nothing more started until the budget "
        "admitted the first (an approved direct call stayed pending behind a model agent)",
        since="v0.11.7",
        delete_when="no run with a budget started before v0.11.7 is still open",
    ),
    "eko-bare-lt-escaped": Patch(
        what="an Eko plan's XML the leader reads (a replan's, a large plan's stored text) has a "
        "'<' that starts no tag ('price < 50') escaped as &lt;, as a bare '&' is (xsky/plan/"
        "repair.py); before, such a plan was refused as malformed. Asked only of XML that holds "
        "such a '<'",
        since="v0.11.7",
        delete_when="no run that read an Eko plan's XML before v0.11.7 is still open",
    ),
    "eko-cut-off-refused": Patch(
        what="an Eko plan's XML the leader reads (a replan's) that is cut off — it ends before "
        "its elements do, or in the middle of a tag — is refused, as Eko's own final reading "
        "refuses it; before, its end was closed and what was left of it ran. Asked only of XML "
        "that is cut off",
        since="v0.11.8",
        delete_when="no run that read an Eko plan's XML before v0.11.8 is still open",
    ),
    "plan-text-reads-no-files": Patch(
        what="a plan's XML the leader reads (a replan's, a stored plan's) that names a schema "
        'file (<output schema="PATH"/>) is refused: the leader does not open files on its '
        "worker's disk (a replan or a model's plan could read any file there into the run); "
        "before, the file was read from the worker's working directory. Asked only of XML "
        "that holds the word 'schema'",
        since="v0.11.8",
        delete_when="no run that read a replan's XML before v0.11.8 is still open",
    ),
    "eko-braced-names": Patch(
        what="a step's input, output or forEach items written as a reference "
        '(items="{{developers}}", as planners write them) is read as the name inside; before, '
        "the braces were kept and the loop asked for a list of that name, which nothing "
        "gave. Asked only of XML that holds such a name",
        since="v0.11.8",
        delete_when="no run that read a plan's XML before v0.11.8 is still open",
    ),
    "eko-html-entities": Patch(
        what="an Eko plan's XML the leader reads (a replan's) with an HTML entity XML does not "
        "know (&nbsp;, &mdash;) has it replaced by its character, as Eko's reader keeps it "
        "as text; before, such a plan was refused. Asked only of XML that holds one",
        since="v0.11.8",
        delete_when="no run that read an Eko plan's XML before v0.11.8 is still open",
    ),
    "answered-wait-note-cleared": Patch(
        what="a task's note 'waiting for Q-1: …' goes when Q-1 is answered (or withdrawn); it "
        "stayed on the board, and in the live page's next event, until the agent's next report",
        since="v0.12.0",
        delete_when="no run that answered a request before v0.12.0 is still open",
    ),
    "escalation-says-whole-error": Patch(
        what="an escalation of a failed task says its error up to 1,000 characters, an ellipsis "
        "where it is cut; it cut the error at 300 with no mark (the fix it named was lost)",
        since="v0.12.0",
        delete_when="no run that held on a failure with a long error before v0.12.0 is still open",
    ),
    "shell-words-as-bash-reads": Patch(
        what="the leader's delegated approvals and 'allow for this run' rules read a shell "
        "command as bash does: a word mixing '…' and \"…$X…\" (a single-quoted {{…}} "
        "reference's rendering) expands at run time, a wrapped command keeps its words' "
        "expansions, a command line a shell re-reads made of a value cannot be checked; before, "
        "bashlex's reading hid such expansions. Asked only of a call the two readings decide apart",
        since="v0.12.1",
        delete_when="no run that had a shell call decided by the leader before v0.12.1 is still open",
    ),
    "shell-reading-round-11": Patch(
        what="the leader's delegated approvals and 'allow for this run' rules read a shell "
        "command as 0.12.2's checker does: a wrapper's options as getopt reads them (xargs -rn 1, "
        "timeout --sig KILL), -o/-O in a cluster of a shell's options and --rcfile take a word, "
        "a shell or interpreter reading its input, what xargs reads from its input, $'…' words "
        "decoded, watch's and git/npx clusters' command lines. Asked only of a call the two "
        "readings decide apart (xsky/leader/shell_readings.py)",
        since="v0.12.2",
        delete_when="no run that had a shell call decided by the leader before v0.12.2 is still open",
    ),
    "shell-reading-round-12": Patch(
        what="the leader's delegated approvals and 'allow for this run' rules read a shell "
        "command as 0.12.3's checker does: a versioned interpreter (python3.11, perl5.36.0), "
        "make -f -, jshell and tclsh read their input, and the input is also //dev/stdin, "
        "/dev/./stdin, ../dev/stdin or a path into /proc; a value a package runner (npm run … --, "
        "npx, uv run) gives its program is read as that program's possible option. Asked only of a call the two readings "
        "decide apart (xsky/leader/shell_readings.py)",
        since="v0.12.3",
        delete_when="no run that had a shell call decided by the leader before v0.12.3 is still open",
    ),
    "shell-reading-round-13": Patch(
        what="the leader's delegated approvals and 'allow for this run' rules read a shell "
        "command as 0.12.4's checker does: chroot NEWROOT and sudo -s with no command, and "
        "runuser USER (su's form), run a shell reading its input; python -m pdb, -m cProfile/"
        "profile/trace of the input, -m in a cluster (-Em code), perl -d, node's valued options "
        "(--title x) and tclsh -encoding read theirs; the input linked to a name, or a file the "
        "command writes, run as a script; python -m timeit's and pdb -c's arguments are code; "
        "an interpreter's options end at its script (python3 tool.py -c x is the script's -c); "
        "ssh's options' values are not a remote command (ssh -p 2222 host); the program a "
        "package or environment runner runs is a command of its own (npx touch x: touch x). "
        "Asked only of a call the two readings decide apart (xsky/leader/shell_readings.py)",
        since="v0.12.4",
        delete_when="no run that had a shell call decided by the leader before v0.12.4 is still open",
    ),
    "shell-reading-round-14": Patch(
        what="the leader's delegated approvals and 'allow for this run' rules read a shell "
        "command as 0.12.5's checker does: the command line a runner gives a shell (mise exec "
        "-c, pnpm -c/--shell-mode exec, yarn exec's first word, pixi run, devbox run) and "
        "pnpm's implied exec (pnpm touch x) are commands the rules see; nix shell/develop, "
        "nix-shell, devbox/pixi/pipenv/poetry/hatch shell given no command read their input. "
        "Asked only of a call the two readings decide apart (xsky/leader/shell_readings.py)",
        since="v0.12.5",
        delete_when="no run that had a shell call decided by the leader before v0.12.5 is still open",
    ),
    "shell-reading-round-15": Patch(
        what="the leader's delegated approvals and 'allow for this run' rules read a shell "
        "command as 0.12.6's checker does: a deny or ask rule naming a subcommand holds past "
        "docker's `--` before it (docker -- run), past options between its words (gh pr -R o/r "
        "merge, aws s3 --region r rm), and for its aliases (helm delete/del/un, npm rm/un and "
        "npm's abbreviations, docker volume/network remove, nerdctl's management commands, "
        "terraform apply -destroy); a {{…}} value, $(…), a glob or xargs's input in a subcommand's "
        "place is asked for; a file "
        "written then read as code by pytest (any .py), tox, rake, just, task, invoke, gradlew, "
        "pre-commit, mkdocs, sphinx-build, or a code file run by an existing Makefile's or "
        "package.json's task is asked for. Asked only of a call the two readings decide apart "
        "(xsky/leader/shell_readings.py)",
        since="v0.12.6",
        delete_when="no run that had a shell call decided by the leader before v0.12.6 is still open",
    ),
    "growth-keeps-failures": Patch(
        what="a forEach expanding or a watch polling or firing (a plan version the run writes "
        "itself) leaves an agent that failed, or that a person cancelled, as it is; before, "
        "every such version ran each failed agent again (a failed deploy once per firing of a "
        "watch elsewhere in the plan). Asked only of a growth step that would run one again",
        since="v0.12.0",
        delete_when="no run that grew a loop or a watch beside a failed agent before v0.12.0 "
        "is still open",
    ),
    "loop-lists-read-as-written": Patch(
        what="a forEach's list is read as a model writes one: a JSON array in a code fence, "
        "written as a JSON string or after a line of prose, or the items of a numbered or "
        "bulleted list without its heading; before, only text that began with '[' was read "
        "as an array, else every line was an item. Asked only of a list the two read apart",
        since="v0.11.9",
        delete_when="no run that expanded a forEach before v0.11.9 is still open",
    ),
    "eko-inputs-keep-dependencies": Patch(
        what="an agent whose step reads another agent's value (Eko's <node input=\"x\">) is "
        "given its own dependencies' results too, as Eko shows an agent the results before it; "
        "before, the value it was passed as input left them out. Asked only of such an agent",
        since="v0.11.9",
        delete_when="no run that dispatched such an agent before v0.11.9 is still open",
    ),
    "approve-run-answers-alike": Patch(
        what="a person's 'allow for this run' of a tool call also answers the other pending "
        "approvals of the same call (another agent waiting on it); before, each waited for an "
        "approval of its own. Asked only when such a request waits",
        since="v0.11.9",
        delete_when="no run that had a tool call approved for the run before v0.11.9 is still open",
    ),
    "eko-outputs-read-where-written": Patch(
        what='a step\'s output another agent reads (<node output="links"> read by another '
        "agent's forEach or input), with steps after it, splits its agent there: A.links does "
        "the steps up to it and answers with the value; before, the reader got the agent's "
        "last answer. Asked only of a plan the split changes",
        since="v0.11.9",
        delete_when="no run that lowered such a plan before v0.11.9 is still open",
    ),
    "plan-attributes-lenient": Patch(
        what="a plan's XML the leader reads with a watch's loop written \"True\" (any case) "
        "reads it as true, and an Eko agent's status (Eko's run state) is left out with a "
        "warning; before, both refused the plan. Asked only of XML that holds one",
        since="v0.11.9",
        delete_when="no run that read such a plan's XML before v0.11.9 is still open",
    ),
    "eko-markup-read-whole": Patch(
        what="an Eko plan's agent <task> that holds elements (a step naming a <button>) is kept "
        "as text, as its <node>s are, and its <name> and <thought> are read whole, as Eko reads "
        "their textContent; before, such a task refused the plan and the name or thought was cut "
        "at its first element. Asked only of Eko XML that may hold one",
        since="v0.11.11",
        delete_when="no run that read such a plan's XML before v0.11.11 is still open",
    ),
    "final-board-as-shown": Patch(
        what="the whole board a large run stores as it ends shows each forEach item's line with "
        "its item (as the board query does) and no 'paused' note once the run ended; its "
        "length decides how many parts are stored. Asked only where the board differs",
        since="v0.11.11",
        delete_when="no large run that ended before v0.11.11 is replayed (queries, resets)",
    ),
    "shell-values-by-field": Patch(
        what="each field of an agent's result a shell command names ({{agent_1_result.title}}, "
        "{{agent_1_result.url}}, the whole {{agent_1_result}}) is a shell variable of its own; "
        "before, all of one agent's references shared the first one's variable and value. Asked "
        "only when a command names two different fields of one result",
        since="v0.12.3",
        delete_when="no run whose commands named two fields of one result before v0.12.3 is "
        "still open",
    ),
    "raw-item-given-as-data": Patch(
        what="{{raw:item}} in a shell command is given as data, like {{item}} (a shell variable "
        "set before the command runs), not pasted as code: an item is an agent's result or a "
        "page's text. Asked only when a command names {{raw:item}}",
        since="v0.11.11",
        delete_when="no run whose commands pasted {{raw:item}} before v0.11.11 is still open",
    ),
    "budget-changes-bind-running-agents": Patch(
        what="set_budget fits the shares of the agents running at that moment to the new limits "
        "(a share only shrinks; one that had none — the run had no budget — gets one), and their "
        "agents learn it before each model call; before, a budget lowered or set mid-run bound "
        "only agents dispatched later (an agent spent 7.5x the lowered limit). Asked only when a "
        "task runs as the budget changes",
        since="v0.11.10",
        delete_when="no run whose budget was changed while agents ran before v0.11.10 is still open",
    ),
    "cancel-during-leader-calls-honoured": Patch(
        what="a run cancelled while its leader_setup or planner activity runs ends cancelled; "
        "before, the cancellation was taken for that activity's failure: a failed set-up let the "
        "whole run go on (a fork cancelled right after it was made ran its agents to the end), a "
        "failed first plan failed the run. Asked only when that happens",
        since="v0.11.10",
        delete_when="no run cancelled during such a call before v0.11.10 is still open",
    ),
    "reports-of-every-dispatch-checked": Patch(
        what="a report_progress naming a dispatch of its task other than the latest must carry "
        "that dispatch's token, and one naming a dispatch never issued is refused; before, such a "
        "report was taken without a check and its usage settled (a forged report of 900 million "
        "tokens stopped a run on its budget). Asked only of a report the check refuses",
        since="v0.11.10",
        delete_when="no run that took such a report before v0.11.10 is still open",
    ),
    "skill-updates-wait-for-their-skill": Patch(
        what="a skill entity's `decide` (promote/discard) sent before the entity has read its "
        "skill from git is accepted and judged once it has (refused then only if there is no "
        "staging version), and a `retire` taken then is refused once the skill reads as "
        "published; before, the verdict was refused as 'has no staging version' with no name "
        "and the retire went through. Asked only of a call taken before the skill is read",
        since="v0.12.5",
        delete_when="no skill entity that took such a call before v0.12.5 is still open",
    ),
    "stall-waits-for-worker": Patch(
        what="before a stall ladder's rung the leader asks the server (activity leader_attempts, "
        "its own run described) whether the task's attempt runs: one scheduled that no worker "
        "has started (none polls its queue, or the one that had it was lost) is not stalled — "
        "its idle clock starts over and the board says 'waiting for a worker' — and one "
        "started counts its idle time from its start; a direct tool agent (no model to read a "
        "nudge) is not nudged, the rung only counted. Before, a task that only waited for a "
        "worker was nudged at 180 s, restarted, then failed 'stalled' and replanned",
        since="v0.12.5",
        delete_when="no run started before v0.12.5 is still open (their ladders climb for "
        "attempts that wait for a worker, and nudge direct tool agents)",
    ),
    "stall-sees-operator-pause": Patch(
        what="a task whose attempt an operator paused (Temporal's activity pause: `temporal "
        "activity pause`; leader_attempts says so) is not stalled: its idle clock starts over and "
        "the board says 'paused by an operator' with the unpause command; before, the board said "
        "'waiting for a worker' (a paused attempt read as one no worker had started), and one "
        "paused while it ran climbed the ladder. Asked only when the server says an attempt is "
        "paused",
        since="v0.12.6",
        delete_when="no run that saw a paused attempt before 0.12.6 is still open",
    ),
    "stall-rung-named": Patch(
        what="a direct tool agent's first stall rung (no model to nudge: the rung only counted, "
        "patch stall-waits-for-worker) is logged and metered as 'counted' (xsky_stall_steps "
        "step=counted), with the board's words; before, as a 'nudge' with the nudge a model "
        "would have been sent. Asked only at such a rung",
        since="v0.12.6",
        delete_when="no run that took such a rung before v0.12.6 is still open",
    ),
    "unknown-signals-refused": Patch(
        what="a signal of a name the leader has no handler for (an update's: `temporal workflow "
        "signal --name resume_run`, a query's, a typo) is refused where people look: counted "
        "on the board, written in the permission log with what to send instead; before, the "
        "SDK kept it unhandled in the worker's memory and nothing said so. Asked only when "
        "such a signal comes",
        since="v0.12.6",
        delete_when="no run that was sent such a signal before v0.12.6 is still open",
    ),
    "leader-line-one-deep": Patch(
        what="the leader's note when an offline answer turned it off says 'no model configured "
        "on the workers; T-3 was answered offline', so the leader's line — board notes, the Web "
        "UI's pane, the live page, the ledger query's mode — has no parenthesis inside another "
        "('leader: off (no model configured on the workers (T-3 was answered offline)): …'; "
        "walk11b reworded it in the CLI only). Asked only when that note is written",
        since="v0.12.6",
        delete_when="no run whose leader was turned off by an offline answer before v0.12.6 is "
        "still open",
    ),
}
"""The live patches, by id."""

RETIRED: frozenset[str] = frozenset(
    {
        # collapsed in v0.2.0: the behaviour of each is the only one now
        "cheap-tools-local",
        "continue-after-progress",
        "deps-as-context",
        "event-cap",
        "history-by-reference",
        "local-activities-settle-together",
        "outcome-is-status",
        "replan-privileged-review",
        "resave-if-changed",
        "results-by-reference",
        "route-atoms",
        "search-attributes",
        "shell-quoted-values",
        "state-by-reference",
        "state-sealed",
    }
)
"""Ids used once and gone: never to be reused."""


def patched(patch_id: str) -> bool:
    """``workflow.patched`` for a registered id (an unregistered one is a programming error,
    raised on the first workflow task that reaches it, in every test that runs the code)."""
    if patch_id not in PATCHES:
        raise KeyError(f"workflow patch {patch_id!r} is not registered in workflows/patches.py")
    return workflow.patched(patch_id)
