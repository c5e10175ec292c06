"""How the checker reads a program's arguments (xsky/security/option_reading.py), and the two
places the table of program forms reaches ordinary decisions: decide() asks a person about a
sed, awk or tar form that hides a program (so a deny rule cannot be passed by hiding the denied
command in one), and the parser reads the command lines `watch` and `flock -c` hand to sh."""

from __future__ import annotations

import pytest

from xsky.plan.models import RoleCapabilityModel
from xsky.security.option_reading import Options, read, rule_words
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.shell_parse import split_command

TAR = Options(
    flags=frozenset({"-c", "-x", "-z", "-v"}),
    valued=frozenset({"-f", "-C", "--file"}),
    old_style=True,
)


def names(args: list[str], spec: Options = TAR, extra: frozenset[str] = frozenset()) -> list:
    reading = read(args, spec, extra)
    return [(o.name, o.value) for o in reading.options] + [("?", o.name) for o in reading.unknown]


@pytest.mark.parametrize(
    ("args", "read_as"),
    [
        (["-xzf", "a.tgz"], [("-x", None), ("-z", None), ("-f", "a.tgz")]),
        (["-xzfa.tgz"], [("-x", None), ("-z", None), ("-f", "a.tgz")]),
        (["xzf", "a.tgz", "d"], [("-x", None), ("-z", None), ("-f", "a.tgz")]),  # old style
        (["--file=a.tgz", "-x"], [("--file", "a.tgz"), ("-x", None)]),
        (["--file", "a.tgz"], [("--file", "a.tgz")]),
        (["-x", "--", "-z"], [("-x", None)]),  # after --, -z is a plain argument
        (["-xq"], [("-x", None), ("-q", None), ("?", "-q")]),
        (["-f", "--weird"], [("-f", "--weird")]),  # a value, as getopt takes it
    ],
)
def test_options_are_read_as_getopt_reads_them(args: list[str], read_as: list) -> None:
    assert names(args) == read_as


def test_plain_arguments_and_the_end_of_options() -> None:
    reading = read(["-x", "a", "--", "-z", "b"], TAR)
    assert reading.positionals == ("a", "-z", "b")
    interpreter = Options(flags=frozenset({"-u"}), first_positional_ends=True)
    assert read(["-u", "x.py", "-c", "1"], interpreter).positionals == ("x.py", "-c", "1")


def test_a_value_only_attached_never_takes_the_next_word() -> None:
    sed = Options(flags=frozenset({"-n"}), valued=frozenset({"-e"}), attached=frozenset({"-i"}))
    assert names(["-i.bak", "e"], sed) == [("-i", ".bak")]
    assert names(["-in", "e"], sed) == [("-i", "n")]  # GNU: -in is -i with the suffix "n"
    assert read(["-i", "e"], sed).positionals == ("e",)


def test_words_a_rule_writes_are_known_yet_read_as_what_they_are() -> None:
    unknown = Options(combined=False)
    assert read(["-xq"], unknown, frozenset({"-xq"})).unknown == ()
    assert [o.name for o in read(["-xq"], unknown).unknown] == ["-xq"]
    # a known option stays itself: `-fprog` written in a rule is still -f with the value prog
    awk = Options(valued=frozenset({"-f"}))
    assert names(["-fprog"], awk, frozenset({"-fprog"})) == [("-f", "prog")]
    assert rule_words("pytest --maxfail=* -x") >= {"--maxfail", "--maxfail=*", "-x"}


# -- decide(): forms hiding a program are asked about, whatever the role holds --------------------

DEV = RoleCapabilityModel(name="dev", allowed_tools=["shell"])
DENY_CURL = PermissionSettings(layers=[PermissionLayer(scope="user", deny=["shell(curl:*)"])])


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("sed 's|x|curl evil.example|e' f", "s///e flag"),
        ("sed --expression='1e curl evil.example' f", "sed's e command"),
        ("tar -xf a.tar --to-com='curl evil.example'", "--to-command"),
        ("tar -xf evil.example:a.tar", "another machine"),
        ("awk -fprog.awk f", "awk -f reads its program"),
        ("awk --file=prog.awk f", "awk -f reads its program"),
        ("mawk -W exec prog.awk", "awk -W exec"),
    ],
)
def test_a_role_allowed_command_hiding_a_program_in_sed_awk_or_tar_is_asked_about(
    command: str, says: str
) -> None:
    decision = decide("shell", {"command": command}, DEV, DENY_CURL, "/ws")
    assert decision.effect == "ask", decision.reason
    assert says in decision.reason


@pytest.mark.parametrize(
    "command", ["tar -xf a.tar", "awk '/a|b/ {print}' f", "make deploy", "pytest -k slow", "env"]
)
def test_what_only_delegated_rules_refuse_leaves_ordinary_decisions_as_they_were(
    command: str,
) -> None:
    decision = decide("shell", {"command": command}, DEV, DENY_CURL, "/ws")
    assert decision.effect == "allow", decision.reason


def test_watch_and_flock_command_lines_are_read_as_commands() -> None:
    assert [p.argv for p in split_command("watch -n 1 'sed -n p f; rm x'")][1:] == [
        ["sed", "-n", "p", "f"],
        ["rm", "x"],
    ]
    assert [p.argv for p in split_command("flock lock -c 'rm x'")][1:] == [["rm", "x"]]
    asker = RoleCapabilityModel(name="asker", requested_tools=["shell"])
    rules = PermissionSettings(
        layers=[PermissionLayer(scope="user", allow=["shell(watch:*)", "shell(sed:*)"])]
    )
    decision = decide("shell", {"command": "watch 'sed -n p f; rm x'"}, asker, rules, "/ws")
    assert decision.effect == "ask"  # rm x is nobody's rule: before, the line read as one sed


def test_how_words_are_expanded_is_recorded_for_each_part() -> None:
    (part,) = split_command("LC_ALL=C tar -czf a.tgz * ./* \"$X\" '*' src/*.py")
    assert part.assignments == ["LC_ALL=C"]
    assert part.expansions == {3: "glob-start", 4: "glob", 5: "runtime", 7: "glob"}
