"""A mistyped command, sub-command, option or choice of starter.py: one line naming the
nearest right one, exit 2, no traceback (Python 3.11's argparse has no suggest_on_error)."""

from __future__ import annotations

import pytest

from cli.main import main

CASES = [
    (["stauts", "x"], "starter.py: error: unknown command 'stauts' — did you mean 'status'?"),
    (
        ["run", "--folow", "x.xml"],
        "starter.py run: error: unknown option --folow — did you mean --follow?",
    ),
    (["run", "x.xml", "--folow=yes"], "unknown option --folow — did you mean --follow?"),
    (
        ["skills", "lst"],
        "starter.py skills: error: unknown skills command 'lst' — did you mean 'list'?",
    ),
    (["permissions", "chek"], "unknown permissions command 'chek' — did you mean 'check'?"),
    (["list", "--status", "runing"], "--status 'runing' is not one of running,"),
    (["list", "--status", "runing"], "— did you mean 'running'?"),
    (
        ["status", "x", "--zzz"],
        "unknown option --zzz; `starter.py status --help` lists its options",
    ),
    (
        ["status", "x", "more"],
        "unexpected argument 'more'; `starter.py status --help` shows what it takes",
    ),
    (["frobnicate"], "unknown command 'frobnicate'"),
]


@pytest.mark.parametrize(
    ("argv", "says"), CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_a_mistyped_word_is_named_with_the_nearest_right_one(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    said = capsys.readouterr().err
    assert stop.value.code == 2
    assert says in said and "Traceback" not in said, said
    # The one sentence, first and alone: no usage block pushing it off the screen.
    assert len(said.splitlines()) == 1 and "usage:" not in said, said


def test_nothing_is_suggested_when_nothing_is_near(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says", "not_said"),
    [
        # the word after a misspelt option that takes a value is that value, not a stray word
        (["fork", "x", "T-1", "--taks", "hi"], "did you mean --task?", "unexpected argument"),
        # after a misspelt flag it is a stray word, and is said
        (["status", "x", "--folow", "extra"], "unexpected argument 'extra'", None),
    ],
)
def test_the_value_of_a_misspelt_option_is_not_called_an_unexpected_argument(
    argv: list[str], says: str, not_said: str | None, capsys: pytest.CaptureFixture[str]
):
    with pytest.raises(SystemExit):
        main(argv)
    said = capsys.readouterr().err
    assert says in said and (not_said is None or not_said not in said), said


@pytest.mark.parametrize(
    "argv",
    [
        ["budget", "R1", "--task", "T-1", "tokens=5000"],  # as the leader's escalation writes it
        ["budget", "--task", "T-1", "R1", "tokens=5000"],
        ["budget", "R1", "tokens=5000", "--task", "T-1"],
    ],
)
def test_an_optional_positional_after_an_option_is_taken(argv: list[str]) -> None:
    """argparse gives an optional positional nothing once it saw the one before it alone,
    then refuses it after an option: `budget RUN --task T-1 tokens=…` (the command xsky's
    own budget escalation prints) said "unexpected argument 'tokens=5000'"."""
    from cli.args import late_positionals
    from cli.main import build_parser

    parser = build_parser("budget", summaries=False)
    args, extras = parser.parse_known_args(argv)
    assert late_positionals(parser, args, extras) == []
    assert (args.id, args.task, args.limits) == ("R1", "T-1", "tokens=5000")


def test_a_positional_with_a_default_after_an_option_is_taken(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["permissions", "check", "shell", "--role", "verify", '{"command": "ls"}'])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("ALLOW  shell as verify"), out
    with pytest.raises(SystemExit) as e:  # one word too many is still said
        main(["permissions", "check", "shell", "--role", "verify", "{}", "more"])
    assert e.value.code == 2
    assert "unexpected argument 'more'" in capsys.readouterr().err


def test_the_leaders_note_on_a_request_names_the_leader_once() -> None:
    from cli.steer_cmd import leader_said

    assert leader_said("the leader left it to you: unsure") == "the leader left it to you: unsure"
    assert leader_said("left to you: the call may have run") == (
        "the leader: left to you: the call may have run"
    )


def test_a_path_with_spaces_given_unquoted_is_said_with_its_quotes(
    tmp_path, capsys: pytest.CaptureFixture[str]
):
    """`run my plans/a.xml`: 'my' was taken for the plan and 'plans/a.xml' called an
    "unexpected argument" (walk10): the file the words make together is named, quoted."""
    folder = tmp_path / "my plans"
    folder.mkdir()
    (folder / "a.xml").write_text("<workflow/>")
    for command in ("run", "validate"):
        with pytest.raises(SystemExit):
            main([command, str(tmp_path / "my"), "plans/a.xml"])
        err = capsys.readouterr().err
        assert f'a path with spaces is given in quotes — "{folder / "a.xml"}"' in err, err
        assert "unexpected argument" not in err
