"""Programs the checker knows: the options of each known to be safe, and the forms in which an
otherwise ordinary program runs another program, loads code, or writes files its command does
not name.

A rule a person delegates (``shell(sed:*)``, ``shell(tar:*)``) says "you may approve these in my
place". It does not say "and anything else these words can be made to do": ``sed e``, ``awk
'BEGIN{system(…)}'`` and ``tar --checkpoint-action=exec=…`` start with the delegated words and
run any program. This table holds what the checker knows of such programs, so that
:mod:`xsky.security.delegation` approves only calls it can follow:

* **forms** — options, subcommands and script constructs that run a program, load code, or
  write or remove files their command does not name; each entry says why in one line;
* **safe options** — for each program the table knows, the options known to be harmless (not
  running anything, not writing beyond what the program's own job implies); any other option is
  *unknown* and a person decides;
* **always** — programs that run another program however they are called: shells, wrappers
  (``env CMD``, ``xargs``, ``timeout``, ``nice``…), editors, pagers and REPLs with shell escapes,
  and programs whose work is running programs elsewhere (``ssh``, ``docker``, package managers).

For a program the table does not know, only options written in the delegated rule itself are
known (``shell(pytest -x:*)`` makes ``-x`` known for ``pytest``); plain arguments are fine. How
arguments are read (combined short options, ``--opt=value``, ``--``, tar's old style):
:mod:`xsky.security.option_reading`. An option's arity is listed only where it is certain; where
a value may be attached only, it is listed so, and a word after it is read on its own.

Pure: nothing here runs a program or touches a file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from xsky.security.option_reading import Options, Reading, read
from xsky.security.sed_scripts import SedScriptError, effects

Kind = Literal["runs", "writes", "unclear", "unknown"]
_RANK: dict[str, int] = {"runs": 0, "writes": 1, "unclear": 2, "unknown": 3}
_AFTER: dict[str, str] = {
    "runs": ": a person decides (delegated rules never approve running programs)",
    "writes": ": a person decides (delegated rules never approve writes hidden in a command's "
    "arguments)",
    "unclear": "; a person decides",
    "unknown": "; a person decides",
}


@dataclass(frozen=True)
class Finding:
    """Why a call is more than its delegated rule can vouch for."""

    kind: Kind
    why: str  # one clause: "sed's e command runs a program (id)"
    hint: str = ""  # how a person could make it known, where a rule can

    def reason(self) -> str:
        """The sentence a person reads beside the request."""
        return self.why + _AFTER[self.kind] + (f" ({self.hint})" if self.hint else "")

    @property
    def rank(self) -> int:
        """0 for the worst (runs a program): of several findings, a person reads the worst."""
        return _RANK[self.kind]


@dataclass(frozen=True)
class Call:
    """One simple command (or one subcommand of it) as the forms read it."""

    label: str  # the program, with its subcommand: "git log"
    args: tuple[str, ...]
    reading: Reading
    known: frozenset[str]  # words the delegated rules covering the call write themselves
    expanded: frozenset[str]  # words the shell expands (globs, braces): no script may be one


Forms = Callable[[Call], "Finding | None"]


@dataclass(frozen=True)
class Program:
    """What the checker knows of one program, or one subcommand of one."""

    options: Options | None = None  # the options known to be safe; None: only the rule's own
    refused: Mapping[str, Finding] = field(default_factory=dict)  # option → what it does
    valued_refused: frozenset[str] = frozenset()  # refused options that take a value
    forms: Forms | None = None  # forms read from the whole call
    always: Finding | None = None  # runs another program however it is called
    subcommands: Mapping[str, Program] | None = None  # then `options` precede the subcommand
    other: Program | None = None  # a subcommand the table does not list


def runs(why: str) -> Finding:
    return Finding("runs", why)


def writes(why: str) -> Finding:
    return Finding("writes", why)


def _opts(
    flags: str = "",
    valued: str = "",
    attached: str = "",
    *,
    combined: bool = True,
    numeric: bool = False,
    first_positional_ends: bool = False,
    old_style: bool = False,
    ends: frozenset[str] = frozenset(),
) -> Options:
    """Options from space-separated names, read as :class:`Options` says."""
    return Options(
        frozenset(flags.split()),
        frozenset(valued.split()),
        frozenset(attached.split()),
        combined,
        numeric,
        first_positional_ends,
        old_style,
        ends,
    )


def _program(
    options: Options | None,
    *refusals: tuple[Finding, str],
    valued: str = "",
    forms: Forms | None = None,
    subcommands: Mapping[str, Program] | None = None,
    other: Program | None = None,
) -> Program:
    """A program from its safe options and ``(finding, "names …")`` refusals; ``valued``: the
    refused options that take a value, so the words after them read right. A refused name
    ending in ``*`` refuses every word that starts so (``-fplugin*``: ``-fplugin=x.so``)."""
    refused: dict[str, Finding] = {}
    for finding, names in refusals:
        refused.update(dict.fromkeys(names.split(), finding))
    return Program(options, refused, frozenset(valued.split()), forms, None, subcommands, other)


def _always(why: str) -> Program:
    return Program(always=runs(why))


UNKNOWN = Program()  # a program (or subcommand) the table does not know: the rule's options only


# -- forms read from the arguments ----------------------------------------------------------------


def _values(call: Call, *names: str) -> list[str]:
    return [o.value for o in call.reading.options if o.name in names and o.value is not None]


def _has(call: Call, *names: str) -> bool:
    return any(o.name in names for o in call.reading.options)


def _expanded_script(call: Call, script: str, language: str) -> Finding | None:
    if script in call.expanded:
        return Finding(
            "unclear",
            f"the {language} program {script[:40]!r} holds characters the shell expands "
            "(* ? [ {): what runs depends on the files present",
            "quote it",
        )
    return None


def _sed(call: Call) -> Finding | None:
    scripts = _values(call, "-e", "--expression")
    if not scripts and not _has(call, "-f", "--file"):
        if not call.reading.positionals:
            return None  # sed without a script prints its usage
        scripts = [call.reading.positionals[0]]
    for script in scripts:
        if (found := _expanded_script(call, script, "sed")) is not None:
            return found
    text = "\n".join(scripts)  # as sed joins its -e scripts
    try:
        done = effects(text)
    except SedScriptError as e:
        return Finding("unclear", f"the sed script {text[:40]!r} does not read as sed ({e})")
    if done:
        first = min(done, key=lambda e: _RANK[e.kind])
        return Finding(first.kind, first.what)
    return None


def _awk_loads(call: Call) -> Finding | None:
    """awk forms that take code from elsewhere: -W options (mawk's -W exec, gawk's -W source)
    and gawk's @ (@load, @include, @-calls)."""
    for value in _values(call, "-W"):
        option = value.split("=")[0].strip()
        if option in ("exec", "e", "source", "s", "include", "load"):
            return runs(f"awk -W {option} takes a program (or code) the checker does not read")
        if option not in ("version", "usage"):
            return Finding(
                "unknown",
                f"awk option -W {value[:30]} is not known to the checker "
                "(mawk's -W exec and gawk's -W source take a program)",
            )
    for program in _awk_programs(call):
        if "@" in program:
            return runs("gawk's @load, @include and @-calls load code or call any function")
    return None


def _awk_programs(call: Call) -> list[str]:
    programs = _values(call, "-e", "--source")
    if not programs and not _has(call, "-f", "--file", "-E", "--exec"):
        programs = list(call.reading.positionals[:1])
    return programs


def _awk(call: Call) -> Finding | None:
    """An awk program is judged by what it contains, not parsed: in awk's grammar a ``/`` opens a
    regex or divides by context, which is where a parser and awk could disagree and hide code.
    So any sign counts: ``system``; a ``|`` that is not ``||`` (a pipe — or a regex alternation,
    a person decides either way); ``@`` (gawk's @load, @include, indirect calls); a ``>`` after
    a ``print`` (a redirection to a file, or a comparison)."""
    if (loads := _awk_loads(call)) is not None:
        return loads
    for program in _awk_programs(call):
        if (found := _expanded_script(call, program, "awk")) is not None:
            return found
        if "system" in program:
            return runs("awk's system() runs a program")
        if "|" in program.replace("||", ""):
            return runs('awk\'s pipes (print | "cmd", "cmd" | getline, |&) run programs')
        printed = program.find("print")
        if printed >= 0 and ">" in program[printed:]:
            return writes('awk\'s print > "file" writes the file its program names')
    return None


def _into_root(folders: Sequence[str]) -> bool:
    """Do files written into ``folders`` (none given: the working folder) land where the
    workspace's ``.git/`` is: the working folder itself, one above it, or an absolute path that
    may be either?"""
    if not folders:
        return True
    for folder in folders:
        plain = posixpath.normpath(folder)
        if plain == "." or plain.startswith(("..", "/")):
            return True
    return False


_BESIDE_GIT = "beside .git/, whose hooks git runs"


def _tar(call: Call) -> Finding | None:
    for archive in [] if _has(call, "--force-local") else _values(call, "-f", "--file"):
        host, colon, _ = archive.partition(":")
        if colon and "/" not in host:
            return runs(
                f"tar -f {archive[:40]} names an archive on another machine, reached by running "
                "rsh (--force-local reads it as a file)"
            )
    extracting = _has(call, "-x", "--extract", "--get") and not _has(call, "-O", "--to-stdout")
    if extracting and _into_root(_values(call, "-C", "--directory")):
        return writes(
            f"tar -x writes the files its archive names {_BESIDE_GIT} (extract with -C into a "
            "folder)"
        )
    return None


def _unzip(call: Call) -> Finding | None:
    if _has(call, "-l", "-t", "-v", "-Z", "-p", "-c", "-z"):
        return None  # lists, tests or prints
    if _into_root(_values(call, "-d")):
        return writes(
            f"unzip writes the files its archive names {_BESIDE_GIT} (extract with -d into a "
            "folder)"
        )
    return None


def _cpio(call: Call) -> Finding | None:
    if "--extract" in call.args or any(
        w.startswith("-") and not w.startswith("--") and "i" in w[1:] for w in call.args
    ):
        return writes(f"cpio -i extracts the files its archive names {_BESIDE_GIT}")
    return None


def _ar(call: Call) -> Finding | None:
    if call.args and "x" in call.args[0].lstrip("-"):
        return writes(f"ar x extracts the files its archive names {_BESIDE_GIT}")
    return None


def _7z(call: Call) -> Finding | None:
    command = call.reading.positionals[:1]
    folders = [w[2:] for w in call.args if w.startswith("-o")]
    if command and command[0] in ("x", "e") and _into_root(folders):
        return writes(f"7z {command[0]} writes the files its archive names {_BESIDE_GIT}")
    return None


def _patch(call: Call) -> Finding | None:
    if _has(call, "--dry-run") or not _into_root(_values(call, "-d", "--directory")):
        return None
    return writes(f"patch writes the files its diff names {_BESIDE_GIT} (git apply refuses those)")


def _merges_into_root(program: str, contents: Callable[[str], bool]) -> Forms:
    """A recursive copy of a folder's contents (``cp -rT src .``, ``cp -r src/. .``,
    ``rsync -a src/ .``) merges whatever it holds, a .git/ among it, into the destination."""

    def forms(call: Call) -> Finding | None:
        recursive = _has(call, "-r", "-R", "-a", "--recursive", "--archive")
        words = list(call.reading.positionals)
        target = _values(call, "-t", "--target-directory")
        if target:
            destination, sources = target[-1], words
        elif len(words) >= 2:
            destination, sources = words[-1], words[:-1]
        else:
            return None
        merging = _has(call, "-T", "--no-target-directory") or any(map(contents, sources))
        if recursive and merging and _into_root([destination]):
            return writes(
                f"{program} merges a folder's contents, hidden .git/ files among them, into "
                f"{destination[:40]!r}, {_BESIDE_GIT}"
            )
        return None

    return forms


def _git_other(call: Call) -> Finding | None:
    name = call.label.rpartition(" ")[2]
    if name in call.known:
        return None
    return Finding(
        "unknown",
        f"git {name[:40]} is no git command the checker knows (an alias, or a git-{name[:40]} "
        "program, could run anything)",
        f"a delegated rule that writes it, e.g. shell(git {name[:40]}:*), makes it known",
    )


_MAKE_PROGRAM_VARIABLES = ("SHELL", ".SHELLFLAGS", "MAKESHELL", "MAKEFLAGS", "MFLAGS", "MAKEFILES")


def _make(call: Call) -> Finding | None:
    """``make VAR=value`` changes the commands recipes run, and each target picks the recipes:
    both must be written in the rule (``shell(make test:*)`` approves ``make test``, not ``make
    test deploy``)."""
    for word in call.reading.positionals:
        name, eq, _ = word.partition("=")
        if not eq and word not in call.known:
            return Finding(
                "unknown",
                f"make target {word[:40]!r} runs recipes the delegated rule does not name",
                f"a delegated rule that writes it, e.g. shell(make {word[:40]}:*), makes it known",
            )
        name = name.rstrip("+:?!")
        if not eq or not re.fullmatch(r"[A-Za-z_.][A-Za-z0-9_.]*", name):
            continue
        if name in _MAKE_PROGRAM_VARIABLES:
            return runs(f"make {name}= chooses the program (or its flags) every recipe runs with")
        if word not in call.known:
            return Finding(
                "unknown",
                f"the make variable {word[:40]} changes the commands its recipes run and is not "
                "written in the delegated rule",
                f"a delegated rule that writes it, e.g. shell(make {word[:40]}:*), makes it known",
            )
    return None


def _interpreter(name: str, script_options: Sequence[str] = ()) -> Forms:
    """An interpreter runs a script file (the program the rule named, like make's Makefile);
    without one it runs the code it reads from its input. ``-m MODULE`` runs a module: one the
    table knows (``python -m pip``) is read as that program, any other only when the rule
    writes ``-m`` (``shell(python -m pytest:*)``)."""

    def forms(call: Call) -> Finding | None:
        if _has(call, *script_options, "--version", "-V", "--help", "-h"):
            return None
        module = _values(call, "-m")
        if module:
            inner = PROGRAMS.get(module[0])
            if inner is not None:
                rest = call.reading.positionals
                return evaluate(module[0], inner, rest, call.known, call.expanded)
            if "-m" in call.known:
                return None
            return Finding(
                "unknown",
                f"{name} -m {module[0][:30]} runs a module the checker does not know",
                f"a delegated rule that writes it, e.g. shell({name} -m {module[0][:30]}:*), makes it known",
            )
        script = call.reading.positionals[0] if call.reading.positionals else "-"
        if script == "-":
            return runs(f"{name} without a script runs the code it reads from its input")
        return None

    return forms


def _env(call: Call) -> Finding | None:
    if any("=" not in word for word in call.reading.positionals):
        return runs("env runs the command it is given")
    return None  # only prints the environment


def _command(call: Call) -> Finding | None:
    if _has(call, "-v", "-V"):
        return None  # only says what a name is
    return runs("command runs the command it is given")


def _subcommand(*names: str, why: str) -> Forms:
    def forms(call: Call) -> Finding | None:
        if call.reading.positionals and call.reading.positionals[0] in names:
            return runs(why)
        return None

    return forms


_GIT_READS_CONFIG = ("--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch")
_GIT_CHANGES_CONFIG = ("--unset", "--unset-all", "--add", "--replace-all")
# Keys a git config may set that make git run nothing.
_GIT_SAFE_KEYS = {
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "push.default",
    "color.ui",
    "merge.conflictstyle",
}


def _git_config(call: Call) -> Finding | None:
    if _has(call, *_GIT_READS_CONFIG):
        return None
    if _has(call, "-e", "--edit"):
        return runs(f"git config --edit {_EDITOR}")
    words = list(call.reading.positionals)
    if words and words[0] in ("get", "list"):
        return None
    if words and words[0] in ("set", "unset", "rename-section", "remove-section"):
        words = words[1:]
    elif len(words) <= 1 and not _has(call, *_GIT_CHANGES_CONFIG):
        return None  # `git config KEY` reads one key
    key = words[0].lower() if words else ""
    if key in _GIT_SAFE_KEYS:
        return None
    return runs(
        f"git config {key[:40] or '…'} changes configuration, which can make git run programs "
        "(core.pager, core.sshCommand, aliases, hooks …)"
    )


_EDITOR = "opens an editor (vi), which runs the commands it reads; give the message with -m"


def _git_commit(call: Call) -> Finding | None:
    if _has(call, "-e", "--edit", "-c", "--reedit-message"):
        return runs(f"git commit --edit {_EDITOR}")
    if _has(call, "-m", "--message", "-F", "--file", "-C", "--reuse-message", "--no-edit"):
        return None
    return runs(f"git commit without a message {_EDITOR}")


def _git_tag(call: Call) -> Finding | None:
    annotated = _has(call, "-a", "--annotate", "-s", "--sign", "-u", "--local-user")
    given = _has(call, "-m", "--message", "-F", "--file")
    if _has(call, "-e", "--edit") or (annotated and not given):
        return runs(f"git tag -a without a message {_EDITOR}")
    return None


def _git_edits_unless(sub: str, *quiet: str) -> Forms:
    def forms(call: Call) -> Finding | None:
        if _has(call, "-e", "--edit") or not _has(call, *quiet):
            return runs(f"git {sub} {_EDITOR}")
        return None

    return forms


def _git_url(call: Call) -> Finding | None:
    for word in call.reading.positionals:
        if word.lower().startswith(("ext::", "fd::")):
            return runs(f"git's {word.split('::')[0]}:: transport runs a command")
    return None


def _script_named(call: Call) -> Finding | None:
    """``npm run NAME``: the script NAME runs, so the rule must name it."""
    names = call.reading.positionals[:1]
    return _unnamed_script(call.label, names[0]) if names and names[0] not in call.known else None


def _subcommand_named(call: Call) -> Finding | None:
    """``yarn NAME``: a word that is no command of the package manager runs the script NAME."""
    label, _, name = call.label.rpartition(" ")
    return _unnamed_script(label, name) if name not in call.known else None


def _unnamed_script(label: str, name: str) -> Finding:
    return Finding(
        "unknown",
        f"{label} {name[:40]} runs the package script {name[:40]!r}, which the delegated rule "
        "does not name",
        f"a delegated rule that writes it, e.g. shell({label} {name[:40]}:*), makes it known",
    )


def _yarn_alone(call: Call) -> Finding | None:
    """``yarn`` without a command installs."""
    return None if call.reading.positionals else _installs(call)


def _installs(call: Call) -> Finding | None:
    if _has(call, "--ignore-scripts"):
        return None
    return runs(
        "installing packages runs their install scripts (and the project's); --ignore-scripts "
        "does not"
    )


def _socat(call: Call) -> Finding | None:
    for word in call.args:
        if re.search(r"(?i)(^|!!)(exec|system)[:,]", word):
            return runs("socat's EXEC:/SYSTEM: addresses run programs")
    return None


def _pipe_names(program: str) -> Forms:
    """ImageMagick and Ghostscript read a file name starting with | (or %pipe%) as a program."""

    def forms(call: Call) -> Finding | None:
        for word in call.args:
            value = word.split("=", 1)[-1]
            if value.startswith("|") or "%pipe%" in value.lower():
                return runs(f"{program} reads a file name starting with | as a program to run")
        return None

    return forms


def _exiftool(call: Call) -> Finding | None:
    if any("${" in word for word in call.args):
        return runs("exiftool evaluates Perl in ${…;…} expressions")
    return None


def _go(call: Call) -> Finding | None:
    words = call.reading.positionals
    if words and words[0] == "generate":
        return runs("go generate runs the commands of //go:generate comments")
    if words and words[0] == "run" and any("@" in w for w in words[1:]):
        return runs("go run PACKAGE@VERSION downloads and runs a program")
    if words and words[0] == "env" and "-w" in call.args:
        return runs("go env -w sets GOFLAGS and the tools later builds run")
    return None


def _cmake(call: Call) -> Finding | None:
    for value in _values(call, "-E"):
        if value in ("env", "time", "chdir"):
            return runs(f"cmake -E {value} runs a command")
    return None


_SSH_RUNS = {
    "proxycommand",
    "localcommand",
    "permitlocalcommand",
    "knownhostscommand",
    "match",
    "include",
    "pkcs11provider",
    "securitykeyprovider",
    "remotecommand",
    "proxyjump",
    "controlpath",
    "controlmaster",
}
_SSH_SAFE_KEYS = {
    "port",
    "user",
    "identityfile",
    "identitiesonly",
    "connecttimeout",
    "connectionattempts",
    "batchmode",
    "stricthostkeychecking",
    "userknownhostsfile",
    "globalknownhostsfile",
    "loglevel",
    "compression",
    "serveraliveinterval",
    "serveralivecountmax",
    "passwordauthentication",
    "preferredauthentications",
    "numberofpasswordprompts",
    "addressfamily",
    "checkhostip",
    "hashknownhosts",
}


def _ssh_options(program: str) -> Forms:
    def forms(call: Call) -> Finding | None:
        for value in _values(call, "-o"):
            key = re.split(r"[=\s]", value.strip(), maxsplit=1)[0].lower()
            if key in _SSH_RUNS:
                return runs(f"{program} -o {key} runs a program or reads one from elsewhere")
            if key not in _SSH_SAFE_KEYS:
                return Finding("unknown", f"the ssh option {key[:30]} of {program} is not known")
        return None

    return forms


# -- programs that run nothing else, with their safe options ---------------------------------------

_CHECKSUM = _opts(
    "-b -c -t -z -w --binary --check --text --tag --quiet --status --strict --warn --zero "
    "--ignore-missing"
)
_HEADTAIL = _opts(
    "-q -v -z -f -F --quiet --silent --verbose --zero-terminated --follow --retry",
    "-n -c -s --lines --bytes --sleep-interval --pid",
    numeric=True,
)
_GREP = _opts(
    "-r -R -i -y -n -l -L -c -v -w -x -E -F -G -P -o -q -s -h -H -a -I -z -Z -b -U -T -V "
    "--recursive --dereference-recursive --ignore-case --no-ignore-case --line-number "
    "--files-with-matches --files-without-match --count --invert-match --word-regexp "
    "--line-regexp --extended-regexp --fixed-strings --basic-regexp --perl-regexp "
    "--only-matching --quiet --silent --no-messages --no-filename --with-filename --text --null "
    "--null-data --byte-offset --binary --initial-tab --color --colour --line-buffered --help "
    "--version",
    "-e -f -A -B -C -m -d -D --regexp --file --after-context --before-context --context "
    "--max-count --include --exclude --exclude-dir --exclude-from --label --binary-files "
    "--devices --directories",
    numeric=True,
)
_TEST = _opts(
    "-a -b -c -d -e -f -g -G -h -k -L -N -O -p -r -s -S -t -u -w -x -z -n -eq -ne -lt -le -gt "
    "-ge -ef -nt -ot -o",
    combined=False,
)
_COMPRESSOR = (
    "-d -c -k -f -v -q -t -l -r -n -N -z -1 -2 -3 -4 -5 -6 -7 -8 -9 --decompress --compress "
    "--stdout --to-stdout --keep --force --verbose --quiet --test --list --recursive --best "
    "--fast --rm"
)

_PLAIN: dict[str, Options] = {
    "ls": _opts(
        " ".join(f"-{c}" for c in "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvwxXZ1")
        + " --all --almost-all --author --escape --human-readable --si --inode --dereference "
        "--dereference-command-line --numeric-uid-gid --literal --hide-control-chars "
        "--show-control-chars --quote-name --recursive --reverse --size --directory --classify "
        "--file-type --full-time --group-directories-first --no-group --color --hyperlink "
        "--indicator-style --context --zero --help --version",
        "-I -T -w --ignore --hide --tabsize --width --block-size --time-style --quoting-style "
        "--sort --time --format",
    ),
    "cat": _opts(
        "-n -b -s -A -E -T -v -e -t -u --number --number-nonblank --squeeze-blank --show-all "
        "--show-ends --show-tabs --show-nonprinting --help --version"
    ),
    "head": _HEADTAIL,
    "tail": _HEADTAIL,
    "wc": _opts(
        "-l -w -c -m -L --lines --words --bytes --chars --max-line-length --help --version",
        "--files0-from",
    ),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "echo": _opts("-n -e -E"),
    "printf": _opts("", "-v"),
    "pwd": _opts("-L -P"),
    "true": _opts(),
    "false": _opts(),
    "sleep": _opts(),
    "dd": _opts("--help --version"),
    "which": _opts("-a"),
    "cd": _opts("-L -P -e -@"),
    "test": _TEST,
    "[": _TEST,
    "mkdir": _opts("-p -v --parents --verbose", "-m --mode"),
    "rmdir": _opts("-p -v --parents --verbose --ignore-fail-on-non-empty"),
    "touch": _opts(
        "-a -c -m -h --no-create --no-dereference", "-d -t -r --date --reference --time"
    ),
    "rm": _opts(
        "-r -R -f -i -I -d -v --recursive --force --dir --verbose --one-file-system --preserve-root"
    ),
    "mv": _opts(
        "-f -i -n -v -u -b -T --force --no-clobber --update --verbose --backup "
        "--no-target-directory --strip-trailing-slashes",
        "-t -S --target-directory --suffix",
    ),
    "ln": _opts(
        "-s -f -n -v -r -b -T -L -P --symbolic --force --relative --verbose --no-dereference "
        "--no-target-directory --backup --logical --physical",
        "-t -S --target-directory --suffix",
    ),
    "chmod": _opts(
        "-R -v -c -f -r -w -x -X -s -t --recursive --verbose --changes --silent --quiet",
        "--reference",
    ),
    "diff": _opts(
        "-u -c -r -N -q -s -i -w -b -B -E -Z -a -p -y -t -T -e -n --brief "
        "--report-identical-files --unified --context --recursive --new-file "
        "--unidirectional-new-file --ignore-case --ignore-all-space --ignore-space-change "
        "--ignore-blank-lines --ignore-tab-expansion --ignore-trailing-space --text "
        "--show-c-function --side-by-side --expand-tabs --initial-tab --color "
        "--strip-trailing-cr --minimal --speed-large-files --normal --ed --rcs "
        "--suppress-common-lines --left-column --no-dereference --help --version",
        "-U -C -x -X -W -I -F -L -S -D --label --exclude --exclude-from --width --from-file "
        "--to-file --ignore-matching-lines --show-function-line --starting-file --ifdef "
        "--line-format --old-line-format --new-line-format --unchanged-line-format "
        "--horizon-lines --tabsize --palette",
    ),
    "cmp": _opts(
        "-b -l -s --print-bytes --verbose --quiet --silent", "-i -n --ignore-initial --bytes"
    ),
    "cut": _opts(
        "-s -z -n --complement --only-delimited --zero-terminated",
        "-d -f -c -b --delimiter --fields --characters --bytes --output-delimiter",
    ),
    "tr": _opts("-d -s -c -C -t --delete --squeeze-repeats --complement --truncate-set1"),
    "uniq": _opts(
        "-c -d -D -u -i -z --count --repeated --unique --ignore-case --zero-terminated "
        "--all-repeated --group",
        "-f -s -w --skip-fields --skip-chars --check-chars",
    ),
    "basename": _opts("-a -z --multiple --zero", "-s --suffix"),
    "dirname": _opts("-z --zero"),
    "realpath": _opts(
        "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical "
        "--physical --quiet --strip --no-symlinks --zero",
        "--relative-to --relative-base",
    ),
    "readlink": _opts(
        "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing "
        "--no-newline --quiet --silent --verbose --zero"
    ),
    "stat": _opts("-L -f -t --dereference --file-system --terse", "-c --format --printf"),
    "du": _opts(
        "-s -h -a -c -k -m -b -x -L -P -S -l -0 --summarize --human-readable --all --total "
        "--apparent-size --one-file-system --dereference --si --inodes --time",
        "-d -t -B --max-depth --exclude --threshold --block-size --time-style",
    ),
    "df": _opts(
        "-h -k -T -i -l -a -P -H --human-readable --print-type --inodes --local --all "
        "--portability --si --total --output",
        "-t -x -B --type --exclude-type --block-size",
    ),
    "file": _opts(
        "-b -i -L -h -k -r -s -N -0 --brief --mime --mime-type --mime-encoding --dereference "
        "--no-dereference --keep-going --raw --special-files --no-pad --print0",
        "-F -e --separator --exclude",
    ),
    "date": _opts(
        "-u -R --utc --universal --rfc-email --iso-8601",
        "-d -r --date --reference --rfc-3339",
        "-I",
    ),
    "seq": _opts("-w --equal-width", "-s -f --separator --format"),
    "tee": _opts("-a -i -p --append --ignore-interrupts"),
    "jq": _opts(
        "-r -c -n -s -e -S -j -a -C -M -R --raw-output --compact-output --null-input --slurp "
        "--exit-status --sort-keys --join-output --ascii-output --seq --stream --raw-input --tab "
        "--args --jsonargs --raw-output0 --unbuffered",
        "-f -L --from-file --indent --arg --argjson --slurpfile --rawfile",
    ),
    "xxd": _opts("-p -r -u -i -b -e -E -C -a", "-c -g -l -s -o -n"),
    "md5sum": _CHECKSUM,
    "sha1sum": _CHECKSUM,
    "sha256sum": _CHECKSUM,
    "sha512sum": _CHECKSUM,
    "gzip": _opts(_COMPRESSOR, "-S --suffix"),
    "gunzip": _opts(_COMPRESSOR, "-S --suffix"),
    "xz": _opts(_COMPRESSOR + " -e --extreme", "-T --threads -S --suffix"),
    "bzip2": _opts(_COMPRESSOR + " -s --small"),
    "zstd": _opts(_COMPRESSOR, "-o -T --threads"),
}

_CP_OPTIONS = _opts(
    "-r -R -a -f -i -n -p -v -u -l -s -L -P -H -d -b -T -x --parents --preserve "
    "--no-preserve --backup --reflink --sparse --remove-destination --no-dereference "
    "--dereference --recursive --archive --force --no-clobber --update --verbose "
    "--no-target-directory --strip-trailing-slashes --attributes-only --link "
    "--symbolic-link --one-file-system",
    "-t -S --target-directory --suffix",
)


# -- programs with forms ----------------------------------------------------------------------------

_SED = _program(
    _opts(
        "-n -s -u -z -E -r -b --quiet --silent --separate --unbuffered --null-data "
        "--zero-terminated --regexp-extended --binary --posix --debug --follow-symlinks "
        "--sandbox --help --version",
        "-e -l --expression --line-length",
        "-i --in-place",
    ),
    (runs("sed -f reads its script from a file the checker cannot see"), "-f --file"),
    valued="-f --file",
    forms=_sed,
)

_AWK = _program(
    _opts(
        "-b -c -P -r -t -N -s -O -M -n -S -V -h --characters-as-bytes --traditional --posix "
        "--re-interval --lint-old --use-lc-numeric --no-optimize --optimize --bignum "
        "--non-decimal-data --sandbox --copyright --version --help",
        "-F -v -W -e --field-separator --assign --source",
    ),
    (runs("awk -f reads its program from a file the checker cannot see"), "-f --file -E --exec"),
    (runs("gawk -i/-l include source files and load extensions (code)"), "-i --include -l --load"),
    valued="-f --file -E --exec -i --include -l --load",
    forms=_awk,
)

_TAR = _program(
    _opts(
        "-A -c -d -r -t -u -x -a -j -J -z -Z -k -m -O -p -s -S -U -v -h -i -l -W -w -B -G -n -o "
        "--create --extract --get --list --append --update --concatenate --catenate --diff "
        "--compare --delete --gzip --gunzip --ungzip --bzip2 --xz --lzip --lzma --lzop --zstd "
        "--compress --uncompress --auto-compress --no-auto-compress --verbose --keep-old-files "
        "--skip-old-files --keep-newer-files --keep-directory-symlink --overwrite "
        "--overwrite-dir --no-overwrite-dir --unlink-first --recursive-unlink --touch "
        "--to-stdout --preserve-permissions --same-permissions --no-same-permissions "
        "--same-owner --no-same-owner --numeric-owner --preserve-order --same-order --sparse "
        "--exclude-vcs --exclude-vcs-ignores --exclude-backups --exclude-caches "
        "--exclude-caches-all --exclude-caches-under --null --no-null --no-recursion "
        "--recursion --wildcards --no-wildcards --wildcards-match-slash "
        "--no-wildcards-match-slash --anchored --no-anchored --ignore-case --no-ignore-case "
        "--show-transformed-names --show-stored-names --posix --old-archive --portability "
        "--dereference --hard-dereference --verify --totals --checkpoint --ignore-zeros "
        "--one-file-system --one-top-level --no-xattrs --xattrs --no-acls --acls --no-selinux "
        "--selinux --atime-preserve --force-local --seek --no-seek --full-time --utc "
        "--ignore-failed-read --check-links --remove-files --show-defaults --usage --backup "
        "--delay-directory-restore --no-delay-directory-restore --interactive --confirmation "
        "--occurrence --help --version",
        "-f -C -T -X -b -H -K -N -V --file --directory --files-from --exclude-from --exclude "
        "--exclude-tag --exclude-tag-all --exclude-tag-under --exclude-ignore "
        "--exclude-ignore-recursive --strip-components --transform --xform --owner --group "
        "--mode --mtime --sort --format --blocking-factor --record-size --label "
        "--starting-file --newer --after-date --newer-mtime --warning --quoting-style "
        "--quote-chars --no-quote-chars --suffix --owner-map --group-map",
        old_style=True,
    ),
    (runs("tar --to-command runs a program for each file it extracts"), "--to-command"),
    (runs("tar --checkpoint-action=exec runs a program at each checkpoint"), "--checkpoint-action"),
    (
        runs("tar -I/--use-compress-program runs the program it names to (de)compress"),
        "-I --use-compress-program",
    ),
    (
        runs("tar --rsh-command/--rmt-command name the remote-shell programs it runs"),
        "--rsh-command --rmt-command",
    ),
    (
        runs("tar -F/--info-script/--new-volume-script run a script at the end of each volume"),
        "-F --info-script --new-volume-script",
    ),
    (
        writes("tar -P keeps absolute names and ../ in archives: extracting writes anywhere"),
        "-P --absolute-names",
    ),
    valued="--to-command --checkpoint-action --use-compress-program -I --rsh-command "
    "--rmt-command --info-script --new-volume-script -F",
    forms=_tar,
)

_NEWER = " ".join(f"-newer{a}{b}" for a in "aBcm" for b in "aBcmt")
_FIND = _program(
    _opts(
        "-H -L -P -print -print0 -ls -prune -quit -depth -d -follow -mount -xdev -noleaf "
        "-ignore_readdir_race -noignore_readdir_race -daystart -true -false -empty -readable "
        "-writable -executable -nouser -nogroup -o -or -a -and -not -help --help -version "
        "--version -warn -nowarn -posix",
        "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -type "
        "-xtype -maxdepth -mindepth -size -mtime -mmin -atime -amin -ctime -cmin -newer -anewer "
        f"-cnewer -perm -user -group -uid -gid -links -inum -samefile -lname -ilname -fstype "
        f"-used -context -printf -D -files0-from {_NEWER}",
        "-O",
        combined=False,
    ),
    (
        runs("find -exec/-execdir/-ok/-okdir runs a command for each file"),
        "-exec -execdir -ok -okdir",
    ),
    (writes("find -delete removes every file it matches"), "-delete"),
    (
        writes("find -fprint/-fprintf/-fls write the file they name"),
        "-fprint -fprint0 -fprintf -fls",
    ),
    valued="-fprint -fprint0 -fprintf -fls",
)


def _git_options(flags: str = "", attached: str = "", numeric: bool = False) -> Options:
    """A git subcommand's options. Values are read only when attached (``-n5``,
    ``--format=x``): git reads many of its options' values either way and some only attached,
    and a word read on its own is never hidden from the checker."""
    return _opts(f"{flags} -q --quiet -v --verbose -h --help", "", attached, numeric=numeric)


_LOG_FLAGS = (
    "-p -u --patch -s --no-patch --stat --shortstat --numstat --name-only --name-status "
    "--oneline --graph --decorate --no-decorate --all --branches --tags --remotes --reverse "
    "--merges --no-merges --first-parent --follow --abbrev-commit --no-abbrev-commit --abbrev "
    "--raw --summary --patch-with-stat --full-diff --color --no-color --word-diff --cached "
    "--staged --no-renames -M -C -w -b --ignore-all-space --ignore-space-change --minimal "
    "--patience --histogram --relative --no-relative --compact-summary --dirstat --date-order "
    "--topo-order --author-date-order --left-right --cherry-pick --cherry-mark --boundary "
    "--simplify-by-decoration --full-history --ancestry-path --show-signature --no-walk "
    "--source --use-mailmap --mailmap --log-size --full-name --exit-code --check --no-index "
    "-R --binary --text -a --no-ext-diff --no-textconv --function-context -W "
    "--ignore-blank-lines --ignore-cr-at-eol --ignore-space-at-eol --no-prefix -z "
    "--regexp-ignore-case -i --basic-regexp -E --extended-regexp -F --fixed-strings "
    "--all-match --invert-grep --pickaxe-all --pickaxe-regex --no-diff-merges --remerge-diff "
    "--combined-all-paths --cc -c -m -t --expand-tabs --no-expand-tabs --notes --no-notes "
    "--show-notes --standard-notes --no-standard-notes -D --irreversible-delete --full-index "
    "--find-renames --find-copies --find-copies-harder --break-rewrites --dirstat-by-file "
    "--color-moved --no-color-moved --color-words --unified"
)
_LOG_ATTACHED = (
    "-n -U -S -G -L -O --max-count --skip --since --after --until --before --author "
    "--committer --grep --format --pretty --date --diff-filter --encoding --stat-width "
    "--stat-name-width --stat-graph-width --inter-hunk-context --src-prefix --dst-prefix "
    "--line-prefix --max-parents --min-parents --exclude --glob --diff-merges --word-diff-regex"
)
_LOG = _program(_git_options(_LOG_FLAGS, _LOG_ATTACHED, numeric=True))
_UPLOAD_PACK = runs(
    "git's --upload-pack/--receive-pack/--exec name the program run at the other end (or here)"
)

_GIT_SUBCOMMANDS: dict[str, Program] = {
    "status": _program(
        _git_options(
            "-s --short -b --branch --porcelain --long -z --column --no-column --ahead-behind "
            "--no-ahead-behind --renames --no-renames --show-stash -u --untracked-files "
            "--ignored --ignore-submodules"
        )
    ),
    "log": _LOG,
    "show": _LOG,
    "diff": _LOG,
    "whatchanged": _LOG,
    "rev-list": _program(
        _git_options(
            _LOG_FLAGS + " --count --objects --objects-edge --parents --children --timestamp",
            _LOG_ATTACHED,
            numeric=True,
        )
    ),
    "reflog": _LOG,
    "shortlog": _program(
        _git_options("-n --numbered -s --summary -e --email -c --committer --all", "--format -w")
    ),
    "commit": _program(
        _git_options(
            "-a --all -s --signoff --no-signoff -n --no-verify --verify --amend --no-edit "
            "--allow-empty --allow-empty-message --dry-run --short --branch --porcelain --long "
            "-z --null --reset-author -o --only -i --include --no-status --status -e --edit "
            "--no-post-rewrite -u --untracked-files",
            "-c -C -m -F --message --file --reuse-message --reedit-message --author --date "
            "--fixup --squash --cleanup --trailer",
        ),
        (
            Finding("unknown", "git commit -p/--interactive reads its answers from input"),
            "-p --patch --interactive",
        ),
        forms=_git_commit,
    ),
    "tag": _program(
        _git_options(
            "-a --annotate -s --sign -d --delete -v --verify -l --list -f --force -n --no-sign "
            "--column --no-column --merged --no-merged --contains --no-contains --points-at -i "
            "--ignore-case -e --edit --create-reflog",
            "-m -F -u --message --file --local-user --sort --format --cleanup",
        ),
        forms=_git_tag,
    ),
    "branch": _program(
        _git_options(
            "-a --all -r --remotes -l --list -d --delete -D -m --move -M -c --copy -C --merged "
            "--no-merged --contains --no-contains --show-current -f --force -t --track "
            "--no-track --column --no-column -i --ignore-case --create-reflog --unset-upstream",
            "--sort --format --points-at -u --set-upstream-to",
        )
    ),
    "add": _program(
        _git_options(
            "-A --all -u --update -n --dry-run -f --force -N --intent-to-add --refresh "
            "--ignore-errors --ignore-missing --no-all --ignore-removal --renormalize --sparse",
            "--chmod",
        ),
        (runs(f"git add --edit {_EDITOR}"), "-e --edit"),
        (
            Finding("unknown", "git add -p/-i reads its answers from input"),
            "-p --patch -i --interactive",
        ),
    ),
    "rev-parse": _program(
        _git_options(
            "--abbrev-ref --short --verify --is-inside-work-tree --is-bare-repository "
            "--show-toplevel --show-prefix --show-cdup --git-dir --absolute-git-dir --symbolic "
            "--symbolic-full-name --all --branches --tags --remotes --sq --not "
            "--show-superproject-working-tree --git-common-dir --is-shallow-repository"
        )
    ),
    "ls-files": _program(
        _git_options(
            "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u "
            "--unmerged -k --killed -z -t --directory --no-empty-directory --exclude-standard "
            "--full-name --error-unmatch --eol --deduplicate --recurse-submodules",
            "-x --exclude --exclude-per-directory --format",
        )
    ),
    "ls-tree": _program(
        _git_options(
            "-r -t -d -l --long -z --name-only --name-status --full-name --full-tree --abbrev",
            "--format",
        )
    ),
    "cat-file": _program(
        _git_options("-t -s -e -p --batch --batch-check --textconv --filters", "--path")
    ),
    "blame": _program(
        _git_options(
            "-b -c -l -t -s -e -f -n -p -w -M -C --root --show-stats --porcelain "
            "--line-porcelain --incremental --show-name --show-number --show-email --minimal "
            "--progress --no-progress --color-lines --color-by-age",
            "-L -S --contents --date --since --ignore-rev --abbrev",
        )
    ),
    "describe": _program(
        _git_options(
            "--all --tags --long --always --exact-match --first-parent --dirty --broken --contains",
            "--abbrev --match --exclude --candidates",
        )
    ),
    "init": _program(
        _git_options("--bare --shared", "-b --initial-branch --object-format"),
        (runs("git init --template copies hooks (programs) from a folder"), "--template"),
        (writes("git init --separate-git-dir puts the repository elsewhere"), "--separate-git-dir"),
        valued="--template --separate-git-dir",
    ),
    "checkout": _program(
        _git_options(
            "-b -B -f --force --detach -t --track --no-track -m --merge --orphan --ours "
            "--theirs --progress --no-progress --ignore-other-worktrees --recurse-submodules "
            "--no-recurse-submodules --overlay --no-overlay",
            "--conflict",
        ),
        (Finding("unknown", "git checkout -p reads its answers from input"), "-p --patch"),
    ),
    "switch": _program(
        _git_options(
            "-c --create -C --force-create -d --detach -f --force --discard-changes -m --merge "
            "-t --track --no-track --guess --no-guess --orphan --progress --no-progress "
            "--recurse-submodules",
            "--conflict",
        )
    ),
    "restore": _program(
        _git_options(
            "-S --staged -W --worktree --ours --theirs -m --merge --overlay --no-overlay "
            "--progress --no-progress --recurse-submodules --ignore-unmerged",
            "-s --source --conflict",
        )
    ),
    "reset": _program(
        _git_options(
            "--soft --mixed --hard --merge --keep -N --intent-to-add --recurse-submodules "
            "--no-refresh --refresh"
        )
    ),
    "rm": _program(_git_options("-f --force -n --dry-run -r --cached --ignore-unmatch --sparse")),
    "mv": _program(_git_options("-f --force -k -n --dry-run")),
    "stash": _program(
        _git_options(
            "-u --include-untracked -a --all -k --keep-index --no-keep-index --index -S "
            "--staged --only-untracked",
            "-m --message",
        )
    ),
    "clean": _program(_git_options("-d -f --force -n --dry-run -x -X", "-e --exclude")),
    "apply": _program(
        _git_options(
            "--stat --numstat --summary --check --index --cached --3way -3 -R --reverse "
            "--reject -z --unidiff-zero --apply --no-add --binary --recount --allow-empty",
            "-p -C --exclude --include --directory --whitespace",
        )
    ),
    "show-ref": _program(
        _git_options(
            "--head --heads --tags --branches -d --dereference -s --hash --verify --exists"
        )
    ),
    "grep": _program(
        _git_options(
            "--cached --no-index --untracked --no-exclude-standard --exclude-standard "
            "--recurse-submodules -a --text --textconv --no-textconv -i --ignore-case -I -w "
            "--word-regexp --invert-match -h -H --full-name -E --extended-regexp -G "
            "--basic-regexp -P --perl-regexp -F --fixed-strings -n --line-number --column -l "
            "--files-with-matches --name-only -L --files-without-match -z --null -o "
            "--only-matching -c --count --color --no-color --break --heading -p "
            "--show-function -W --function-context --all-match --and --or --not -r "
            "--recursive --no-recursive",
            "-e -A -B -C -m --max-depth --max-count --threads --context --after-context "
            "--before-context",
        ),
        (runs("git grep -O/--open-files-in-pager runs a program"), "-O --open-files-in-pager"),
    ),
    "fetch": _program(
        _git_options(
            "--all -a --append -p --prune -P --prune-tags -t --tags -n --no-tags --dry-run "
            "--force -f --progress --no-progress --unshallow --update-shallow --atomic "
            "--no-recurse-submodules --recurse-submodules --multiple --set-upstream -4 -6",
            "--depth --deepen --shallow-since --shallow-exclude -j --jobs",
        ),
        (_UPLOAD_PACK, "--upload-pack"),
        valued="--upload-pack",
        forms=_git_url,
    ),
    "pull": _program(
        _git_options(
            "--rebase --no-rebase --ff --no-ff --ff-only --squash --no-squash --commit "
            "--no-commit --autostash --no-autostash --all -a -p --prune --tags --no-tags "
            "--progress --no-progress --stat --no-stat -n --verify --no-verify "
            "--allow-unrelated-histories -4 -6",
            "--depth -s --strategy -X --strategy-option",
        ),
        (_UPLOAD_PACK, "--upload-pack"),
        (runs(f"git pull --edit {_EDITOR}"), "-e --edit"),
        valued="--upload-pack",
        forms=_git_url,
    ),
    "push": _program(
        _git_options(
            "--all --mirror --tags --follow-tags --dry-run -n --porcelain --delete -d -f "
            "--force --force-with-lease --force-if-includes -u --set-upstream --atomic "
            "--no-verify --verify --prune --progress --no-progress --thin --no-thin -4 -6",
            "-o --push-option --recurse-submodules --signed",
        ),
        (_UPLOAD_PACK, "--receive-pack --exec"),
        valued="--receive-pack --exec",
        forms=_git_url,
    ),
    "clone": _program(
        _git_options(
            "--bare --mirror -l --local --no-local -s --shared --no-checkout -n --no-hardlinks "
            "--single-branch --no-single-branch --no-tags --recurse-submodules "
            "--shallow-submodules --progress --no-progress --sparse -4 -6",
            "-b --branch -o --origin --depth --shallow-since --shallow-exclude -j --jobs --filter",
        ),
        (_UPLOAD_PACK, "-u --upload-pack"),
        (runs("git clone -c/--config sets configuration, which runs programs"), "-c --config"),
        (runs("git clone --template copies hooks (programs) from a folder"), "--template"),
        valued="-u --upload-pack -c --config --template",
        forms=_git_url,
    ),
    "ls-remote": _program(
        _git_options("-h --heads -t --tags --refs --get-url --symref --exit-code", "--sort"),
        (_UPLOAD_PACK, "--upload-pack"),
        valued="--upload-pack",
        forms=_git_url,
    ),
    "remote": _program(
        _git_options("-f -t -m --mirror --tags --no-tags --dry-run --prune"), forms=_git_url
    ),
    "merge": _program(
        _git_options(
            "--commit --no-commit --ff --no-ff --ff-only --squash --no-squash --stat --no-stat "
            "-n --abort --continue --quit --no-verify --verify --autostash --no-autostash "
            "--allow-unrelated-histories --no-edit --progress --no-progress --log --no-log",
            "-m -F -s --strategy -X --strategy-option --cleanup",
        ),
        (runs(f"git merge --edit {_EDITOR}"), "-e --edit"),
    ),
    "rebase": _program(
        _git_options(
            "--onto --continue --abort --quit --skip --keep-base --autostash --no-autostash "
            "--autosquash --no-autosquash --rebase-merges --no-rebase-merges --root "
            "--fork-point --no-fork-point --ignore-date --committer-date-is-author-date "
            "--keep-empty --no-keep-empty --update-refs --no-update-refs --stat -n --no-stat "
            "--no-verify --verify --apply --merge -m --signoff --force-rebase -f --no-ff",
            "-s --strategy -X --strategy-option --empty --whitespace -C",
        ),
        (runs("git rebase --exec runs a command after each commit"), "-x --exec"),
        (runs(f"git rebase --interactive {_EDITOR}"), "-i --interactive --edit-todo"),
        valued="-x --exec",
    ),
    "cherry-pick": _program(
        _git_options(
            "-n --no-commit -x -s --signoff --ff --allow-empty --allow-empty-message "
            "--keep-redundant-commits --continue --abort --quit --skip --no-edit",
            "-m --mainline --strategy -X --strategy-option --cleanup",
        ),
        (runs(f"git cherry-pick --edit {_EDITOR}"), "-e --edit"),
    ),
    "revert": _program(
        _git_options(
            "-n --no-commit -s --signoff --no-edit --continue --abort --quit --skip",
            "-m --mainline --strategy -X --strategy-option --cleanup",
        ),
        forms=_git_edits_unless(
            "revert", "--no-edit", "-n", "--no-commit", "--continue", "--abort", "--quit", "--skip"
        ),
    ),
    "worktree": _program(
        _git_options(
            "-f --force --detach --checkout --no-checkout --lock --orphan -n --dry-run "
            "--porcelain -z",
            "-b -B --reason --expire",
        )
    ),
    "config": _program(
        _git_options(
            "--global --system --local --worktree -l --list --get --get-all --get-regexp "
            "--get-urlmatch --unset --unset-all --add --replace-all --name-only --show-origin "
            "--show-scope --bool --int --bool-or-int --path --expiry-date -z --null --includes "
            "--no-includes --fixed-value -e --edit",
            "--type --default",
        ),
        (runs("git config -f/--blob read another configuration"), "-f --file --blob"),
        valued="-f --file --blob",
        forms=_git_config,
    ),
    "submodule": _program(
        _git_options(
            "--recursive --init --remote --checkout --merge --rebase --no-fetch -N --force "
            "--cached --files"
        ),
        forms=_subcommand("foreach", why="git submodule foreach runs a command in each submodule"),
    ),
    "bisect": _program(
        _git_options(), forms=_subcommand("run", why="git bisect run runs a command for each step")
    ),
    "notes": _program(
        _git_options("", "-m -F -C --message --file --reuse-message"),
        forms=_git_edits_unless(
            "notes", "-m", "-F", "-C", "--message", "--file", "--reuse-message"
        ),
    ),
    "format-patch": _program(
        _git_options(
            _LOG_FLAGS + " --stdout --cover-letter --no-signature --numbered -N --no-numbered "
            "--attach --inline --thread --no-thread -k",
            _LOG_ATTACHED + " -o --output-directory --subject-prefix --start-number -v "
            "--reroll-count --in-reply-to --to --cc --from",
            numeric=True,
        )
    ),
    "count-objects": _program(_git_options("-H --human-readable")),
    "fsck": _program(
        _git_options(
            "--full --strict --unreachable --dangling --no-dangling --root --tags --cache "
            "--no-reflogs --connectivity-only --lost-found --name-objects --progress --no-progress"
        )
    ),
    "gc": _program(_git_options("--aggressive --auto --prune --no-prune --force")),
    "archive": _program(
        _git_options(
            "-l --list --worktree-attributes -0 -1 -2 -3 -4 -5 -6 -7 -8 -9",
            "--format --prefix -o --output --add-file --mtime",
        ),
        (_UPLOAD_PACK, "--exec --remote"),
        valued="--exec --remote",
    ),
    "difftool": _always("git difftool runs a diff program (-x/--extcmd names any)"),
    "mergetool": _always("git mergetool runs a merge program"),
    "filter-branch": _always("git filter-branch runs its filters as shell commands"),
    "filter-repo": _always("git filter-repo runs its callbacks as Python code"),
    "send-email": _always("git send-email sends mail, and its --*-cmd options run programs"),
    "instaweb": _always("git instaweb starts a web server program"),
    "hook": _always("git hook run runs a hook program"),
    "daemon": _always("git daemon serves repositories and runs --access-hook"),
    "web--browse": _always("git web--browse starts a browser program"),
    "credential": _always("git credential runs the configured credential helpers"),
    "p4": _always("git p4 runs the p4 program"),
    "svn": _always("git svn runs Subversion's programs"),
    # git's own commands that run nothing: their options must be written in the rule
    **dict.fromkeys(
        "help version var check-ignore check-attr check-ref-format name-rev merge-base diff-tree "
        "diff-index diff-files hash-object symbolic-ref for-each-ref show-branch cherry "
        "range-diff verify-commit verify-tag update-index update-ref prune repack bundle "
        "sparse-checkout rerere interpret-trailers stripspace column annotate write-tree "
        "commit-tree read-tree mktree mktag pack-refs replace fast-export request-pull "
        "merge-file merge-tree unpack-file get-tar-commit-id mailinfo mailsplit".split(),
        UNKNOWN,
    ),
}

_GIT = _program(
    _opts(
        "-P --no-pager -p --paginate --bare --no-replace-objects --literal-pathspecs "
        "--glob-pathspecs --noglob-pathspecs --icase-pathspecs --no-optional-locks --version "
        "--help -v -h",
        "-C --git-dir --work-tree --namespace",
    ),
    (
        runs(
            "git -c/--config-env/--exec-path set configuration (core.pager, core.sshCommand, "
            "aliases …) or where git finds its programs"
        ),
        "-c --config-env --exec-path",
    ),
    valued="-c --config-env",
    subcommands=_GIT_SUBCOMMANDS,
    other=Program(forms=_git_other),
)


def _interpreter_program(
    name: str,
    flags: str,
    attached: str,
    inline: str,
    loads: str = "",
    script: str = "",
    valued: str = "",
) -> Program:
    """An interpreter: ``inline`` options give it code to run, ``loads`` options make it load
    code named in them; ``script``: options naming the script file (``php -f``)."""
    refusals = [(runs(f"{name} {inline.split()[0]} runs the code given in its arguments"), inline)]
    if loads:
        refusals.append(
            (runs(f"{name} {loads.split()[0]} loads code named in its arguments"), loads)
        )
    return _program(
        _opts(
            flags,
            f"{valued} -m {script}",
            attached,
            first_positional_ends=True,
            ends=frozenset({"-m", *inline.split()}),
        ),
        *refusals,
        valued=f"{inline} {loads}",
        forms=_interpreter(name, script.split()),
    )


_PYTHON = _interpreter_program(
    "python",
    "-u -B -O -OO -b -bb -s -S -E -I -q -V --version -P -R -d -h --help -v",
    "",
    "-c",
    valued="-W -X --check-hash-based-pycs",
)
_PYTHON = replace(
    _PYTHON,
    refused={**_PYTHON.refused, "-i": runs("python -i runs the code it reads from its input")},
)
_PERL = _interpreter_program(
    "perl",
    "-w -W -X -t -T -a -n -p -s -v -V -c -S -U -u -h",
    "-F -l -0 -I -i -D -C",
    "-e -E",
    loads="-M -m -d -x",
)
_RUBY = _interpreter_program(
    "ruby",
    "-w -W -v --version -c -d -h --help -a -n -p -s -l -S -y",
    "-I -F -0 -K -E -C",
    "-e",
    loads="-r -x",
)
_NODE = _interpreter_program(
    "node",
    "--version -v -h --help --check -c --no-warnings --enable-source-maps --test "
    "--no-deprecation --trace-warnings --abort-on-uncaught-exception --watch",
    "--max-old-space-size --stack-size --input-type --test-reporter --test-name-pattern",
    "-e --eval -p --print",
    loads="-r --require --import --loader --experimental-loader -i --interactive --inspect "
    "--inspect-brk --env-file",
)
_PHP = _interpreter_program(
    "php", "-l -n -q -v -h -i -m -s -w", "", "-r -R -B -E -F -a", loads="-d -z -c", script="-f"
)
_LUA = _interpreter_program("lua", "-v -W -E", "", "-e -i", loads="-l")
_RSCRIPT = _interpreter_program(
    "Rscript",
    "--version --vanilla --verbose --no-environ --no-site-file --no-init-file --no-restore",
    "",
    "-e",
    loads="--default-packages",
)


def _runs_package(manager: str, commands: str) -> dict[str, Program]:
    why = "runs a package's program, downloading it when it is not installed"
    return {c: _always(f"{manager} {c} {why}") for c in commands.split()}


_NPM_OPTIONS = (
    "--silent -s --quiet -q --if-present --workspaces --json --long -l --parseable -p --all -a "
    "--dry-run --no-audit --no-fund --version -v --help -h --ignore-scripts --offline "
    "--prefer-offline --production"
)
_NPM_VALUED = "--prefix -C -w --workspace --loglevel --omit --include --depth"
_NPM_SCRIPT = _program(_opts(_NPM_OPTIONS, _NPM_VALUED))
_NPM_RUN = _program(_opts(_NPM_OPTIONS, _NPM_VALUED), forms=_script_named)
_PACKAGE_SCRIPT = Program(forms=_subcommand_named)  # `yarn build`: the script build
_NPM_INSTALL = _program(
    _opts(
        _NPM_OPTIONS + " --save-dev -D --save -S --save-exact -E --no-save --legacy-peer-deps "
        "--no-package-lock --no-optional --save-optional -O --save-peer -B --frozen-lockfile "
        "--immutable",
        _NPM_VALUED,
    ),
    forms=_installs,
)
_NPM_CONFIG = _program(
    _opts(_NPM_OPTIONS, _NPM_VALUED),
    forms=_subcommand(
        "set",
        "edit",
        "delete",
        why="it changes configuration that chooses programs (script-shell, node-options)",
    ),
)
_NPM = _program(
    _opts(_NPM_OPTIONS, _NPM_VALUED),
    (
        runs("npm --script-shell/--node-options/--userconfig choose what npm runs"),
        "--script-shell --node-options --userconfig --globalconfig --shell --call -c",
    ),
    valued="--script-shell --node-options --userconfig --globalconfig --shell --call -c",
    subcommands={
        **dict.fromkeys(
            "install i ci add update up upgrade rebuild rb link ln install-test it "
            "install-ci-test cit dedupe ddp prune".split(),
            _NPM_INSTALL,
        ),
        **_runs_package("npm", "exec x init create innit"),
        **dict.fromkeys("run run-script rum urn".split(), _NPM_RUN),
        **dict.fromkeys(
            "test t tst start stop restart ls list ll la outdated view v info show search audit "
            "version help root bin prefix whoami pkg explain why doctor fund query pack "
            "diff".split(),
            _NPM_SCRIPT,
        ),
        **dict.fromkeys("config c set get".split(), _NPM_CONFIG),
    },
    other=UNKNOWN,
)
_YARN = _program(
    _opts(
        "--silent -s --json --verbose --version -v --help -h --ignore-scripts --frozen-lockfile "
        "--immutable --offline",
        "--cwd",
    ),
    subcommands={
        **dict.fromkeys("install add up upgrade rebuild link".split(), _NPM_INSTALL),
        **_runs_package("yarn", "dlx exec node create init"),
        "run": _NPM_RUN,
        **dict.fromkeys(
            "test start list info why outdated audit version workspaces bin".split(), _NPM_SCRIPT
        ),
        "config": _NPM_CONFIG,
    },
    other=_PACKAGE_SCRIPT,
    forms=_yarn_alone,
)
_PNPM = _program(
    _opts(_NPM_OPTIONS, _NPM_VALUED),
    subcommands={
        **dict.fromkeys(
            "install i add update up upgrade rebuild rb link ln import".split(), _NPM_INSTALL
        ),
        **_runs_package("pnpm", "exec dlx create init"),
        "run": _NPM_RUN,
        **dict.fromkeys("test t start list ls outdated why audit root bin".split(), _NPM_SCRIPT),
        "config": _NPM_CONFIG,
    },
    other=_PACKAGE_SCRIPT,
)
_BUN = _program(
    _opts("--version -v --help -h --silent --ignore-scripts"),
    (runs("bun -e runs the code given in its arguments"), "-e --eval -p --print"),
    valued="-e --eval -p --print",
    subcommands={
        **dict.fromkeys("install i add a update".split(), _NPM_INSTALL),
        **_runs_package("bun", "x create init repl"),
        "run": _NPM_RUN,
        **dict.fromkeys("test pm outdated".split(), _NPM_SCRIPT),
    },
    other=_PACKAGE_SCRIPT,
)

_PIP_INSTALL = _always(
    "pip install/download/wheel run the build code of what they fetch, and install .pth files "
    "that run with every Python"
)
_PIP_READ = _program(
    _opts(
        "-q --quiet -v --verbose --disable-pip-version-check --no-color --no-input --isolated "
        "-l --local --user --outdated -o --uptodate -u --not-required --exclude-editable "
        "--include-editable -f --files --all --no-index -y --yes --pre",
        "--format --exclude --path",
    )
)
_PIP_COMMANDS = {
    **dict.fromkeys("install download wheel".split(), _PIP_INSTALL),
    **dict.fromkeys(
        "list show freeze check help index inspect search debug hash uninstall cache".split(),
        _PIP_READ,
    ),
}
_PIP = _program(
    _opts(
        "-q --quiet -v --verbose --disable-pip-version-check --no-color --no-input --isolated "
        "--version -V --help -h"
    ),
    (runs("pip --python runs pip inside another interpreter"), "--python"),
    valued="--python",
    subcommands=_PIP_COMMANDS,
    other=UNKNOWN,
)
_UV = _program(
    _opts(
        "-q --quiet -v --verbose --no-color --offline --version -V --help -h --no-cache -n "
        "--frozen --locked"
    ),
    subcommands={
        **dict.fromkeys(
            "run tool sync add build lock venv init export".split(),
            _always("uv runs programs, and builds (runs the build code of) what it installs"),
        ),
        "pip": _program(
            _opts("-q --quiet -v --verbose --no-color --offline"),
            subcommands={
                **_PIP_COMMANDS,
                **dict.fromkeys("sync compile".split(), _PIP_INSTALL),
                "tree": _PIP_READ,
            },
            other=UNKNOWN,
        ),
    },
    other=UNKNOWN,
)

_MAKE = _program(
    _opts(
        "-s --silent --quiet -k --keep-going -S --no-keep-going --stop -n --just-print "
        "--dry-run --recon -B --always-make -i --ignore-errors -q --question -r "
        "--no-builtin-rules -R --no-builtin-variables -w --print-directory --no-print-directory "
        "-t --touch -p --print-data-base -v --version -h --help --trace "
        "--warn-undefined-variables --check-symlink-times -L --no-silent",
        "-C --directory -o --old-file --assume-old -W --what-if --new-file --assume-new",
        "-j --jobs -l --load-average --max-load -O --output-sync -d --debug",
    ),
    (
        runs("make -f/--eval read make code (and recipes) the rule does not name"),
        "-f --file --makefile --eval",
    ),
    (
        runs("make -I/--include-dir reads included makefiles from another folder"),
        "-I --include-dir",
    ),
    valued="-f --file --makefile --eval -I --include-dir",
    forms=_make,
)

_CURL = _program(
    _opts(
        "-s --silent -S --show-error -L --location -f --fail --fail-with-body -I --head -i "
        "--include -v --verbose -k --insecure --compressed -O --remote-name -J "
        "--remote-header-name --create-dirs -G --get -g --globoff -N --no-buffer --http1.0 "
        "--http1.1 --http2 -4 --ipv4 -6 --ipv6 --fail-early --no-progress-meter -# "
        "--progress-bar --remote-name-all --no-keepalive --tr-encoding --raw -q --disable "
        "--retry-all-errors --retry-connrefused -Z --parallel --ssl-reqd --tlsv1.2 --tlsv1.3 "
        "--path-as-is --no-clobber --remove-on-error --help --version",
        "-o --output --output-dir -H --header -X --request -d --data --data-raw --data-binary "
        "--data-urlencode --json -F --form --form-string -A --user-agent -e --referer -u --user "
        "-m --max-time --connect-timeout --retry --retry-delay --retry-max-time -w --write-out "
        "-r --range -C --continue-at --url -b --cookie --max-redirs --max-filesize "
        "--limit-rate -Y --speed-limit -y --speed-time --cacert --capath -E --cert --key "
        "--oauth2-bearer --url-query",
    ),
    (runs("curl -K/--config reads options from a file the checker cannot see"), "-K --config"),
    (runs("curl --engine loads an OpenSSL engine (code)"), "--engine"),
    valued="-K --config --engine",
)
_WGET = _program(
    _opts(
        "-q --quiet -v --verbose -nv --no-verbose -c --continue -N --timestamping -S "
        "--server-response --spider -r --recursive -np --no-parent -nd --no-directories -nH "
        "--no-host-directories -k --convert-links -p --page-requisites -m --mirror "
        "--no-check-certificate -4 -6 --inet4-only --inet6-only -nc --no-clobber "
        "--content-disposition --trust-server-names --show-progress --no-cookies --ignore-case "
        "-x --force-directories --https-only --no-config --help --version",
        "-O --output-document -o --output-file -a --append-output -P --directory-prefix -t "
        "--tries -T --timeout --header -U --user-agent --post-data --post-file --method "
        "--body-data --body-file --user --password -l --level -A --accept -R --reject "
        "--limit-rate -w --wait --waitretry -i --input-file -B --base --referer "
        "--ca-certificate --max-redirect --cut-dirs -Q --quota -D --domains",
        combined=False,
    ),
    (runs("wget -e/--execute runs a .wgetrc command given in its arguments"), "-e --execute"),
    (runs("wget --use-askpass runs a program to ask for the password"), "--use-askpass"),
    (runs("wget --config reads commands from a file the checker cannot see"), "--config"),
    valued="-e --execute --use-askpass --config",
)

_SCP = _program(
    _opts("-4 -6 -q -v -C -B -T -3 -O -s -p -r -R -A", "-P -i -l -o -c -J -X"),
    (runs("scp -S/-D name the program that makes the connection"), "-S -D"),
    (runs("scp -F reads an ssh configuration (ProxyCommand, LocalCommand run programs)"), "-F"),
    valued="-S -D -F",
    forms=_ssh_options("scp"),
)
_RSYNC = _program(
    _opts(
        "-a --archive -r --recursive -v --verbose -z --compress -n --dry-run -h "
        "--human-readable -P --progress --partial -u --update -c --checksum -l --links -L "
        "--copy-links -p --perms -t --times -g --group -o --owner -D --devices --specials -H "
        "--hard-links -A --acls -X --xattrs -x --one-file-system -q --quiet -i "
        "--itemize-changes --stats --delete --delete-before --delete-during --delete-delay "
        "--delete-after --delete-excluded --existing --ignore-existing --size-only -W "
        "--whole-file --inplace --append -b --backup -m --prune-empty-dirs -R --relative "
        "--no-relative -S --sparse -k --copy-dirlinks -K --keep-dirlinks --safe-links "
        "--munge-links --numeric-ids -O --omit-dir-times -J --omit-link-times --no-perms "
        "--no-times --no-owner --no-group --version --help -4 -6 -8 --8-bit-output --list-only "
        "--no-motd --mkpath -y --fuzzy -I --ignore-times --ignore-errors --force "
        "--remove-source-files",
        "--exclude --include --exclude-from --include-from --files-from --filter -f "
        "--max-size --min-size --bwlimit --timeout --contimeout --chmod --suffix --backup-dir "
        "--temp-dir -T --partial-dir --compare-dest --copy-dest --link-dest --port "
        "--password-file --max-delete --modify-window --out-format --compress-level "
        "--compress-choice --checksum-choice -B --block-size --info --debug",
    ),
    (
        runs("rsync -e/--rsh/--rsync-path/-M name the programs it runs (here and there)"),
        "-e --rsh --rsync-path -M --remote-option --daemon --config",
    ),
    (
        writes("rsync --log-file/--write-batch write the files they name"),
        "--log-file --write-batch --only-write-batch",
    ),
    valued="-e --rsh --rsync-path -M --remote-option --config --log-file --write-batch "
    "--only-write-batch",
    forms=_merges_into_root("rsync", lambda s: s.endswith("/")),
)


def _zip(call: Call) -> Finding | None:
    """zip also reads two-letter options (-TT, -FS) inside a cluster of letters."""
    for word in call.args:
        if word == "--":
            break
        if word.startswith("-") and not word.startswith("--") and "TT" in word:
            return _ZIP_TEST
    return None


_ZIP_TEST = runs("zip -TT/--unzip-command names the program that tests the archive")
_ZIP = _program(
    _opts(
        "-r -q -v -j -u -f -m -y -X -D -o -l -T -0 -1 -2 -3 -4 -5 -6 -7 -8 -9 -e -d -g -k "
        "--recurse-paths --quiet --verbose --junk-paths --update --freshen --move --symlinks "
        "--test --encrypt --delete --grow --no-dir-entries",
        "-x -i -P -n -b -t --exclude --include --password --suffixes --temp-path",
    ),
    (_ZIP_TEST, "--unzip-command"),
    valued="--unzip-command",
    forms=_zip,
)
_SORT = _program(
    _opts(
        "-b -d -f -g -h -i -M -n -R -r -V -u -z -s -c -C -m --ignore-leading-blanks "
        "--dictionary-order --ignore-case --general-numeric-sort --human-numeric-sort "
        "--ignore-nonprinting --month-sort --numeric-sort --random-sort --reverse "
        "--version-sort --unique --zero-terminated --stable --check --merge --debug",
        "-k --key -t --field-separator -S --buffer-size -T --temporary-directory --parallel "
        "--random-source --files0-from --batch-size --sort",
    ),
    (runs("sort --compress-program runs a program on its temporary files"), "--compress-program"),
    (
        writes("sort -o writes the file it names (> file is checked by the file rules)"),
        "-o --output",
    ),
    valued="--compress-program -o --output",
)
_SPLIT = _program(
    _opts(
        "-d -x -e -u --numeric-suffixes --hex-suffixes --elide-empty-files --verbose",
        "-a -b -C -l -n -t --suffix-length --bytes --line-bytes --lines --number "
        "--additional-suffix --separator",
    ),
    (runs("split --filter runs a shell command for each piece"), "--filter"),
    valued="--filter",
)
_INSTALL = _program(
    _opts(
        "-d -D -c -C -p -v -s -b --compare --directory --preserve-timestamps --verbose --strip "
        "--backup",
        "-m -o -g -t -S --mode --owner --group --target-directory --suffix",
    ),
    (runs("install --strip-program names the program that strips the files"), "--strip-program"),
    valued="--strip-program",
)
_PATCH = _program(
    _opts(
        "-R -N -E -s -f -t -u -c -n -l -b --dry-run --reverse --forward --silent --quiet "
        "--batch --force --unified --context --normal --ignore-whitespace --backup --verbose "
        "--merge --binary --posix",
        "-p -i -o -d -r -B -V -z -F -D --input --output --directory --reject-file --prefix "
        "--fuzz --strip --suffix",
    ),
    (runs("patch -e/--ed feeds the patch to ed, which can run commands"), "-e --ed"),
    forms=_patch,
)
_RG = _program(
    _opts(
        "-i -s -S -n -N -l -c -v -w -x -F -P -o -q -u -L -z -a -H -I -0 -p -U --ignore-case "
        "--case-sensitive --smart-case --line-number --no-line-number --files-with-matches "
        "--files-without-match --count --count-matches --invert-match --word-regexp "
        "--line-regexp --fixed-strings --pcre2 --only-matching --quiet --hidden --no-ignore "
        "--follow --search-zip --text --with-filename --no-filename --null --pretty "
        "--multiline --files --json --vimgrep --heading --no-heading --column --no-messages "
        "--stats --trim --version --help -h -V --unrestricted",
        "-e -f -g -t -T -A -B -C -m -j -r -E -M --regexp --file --glob --iglob --type "
        "--type-not --after-context --before-context --context --max-count --threads "
        "--replace --encoding --max-columns --max-depth --max-filesize --sort --sortr --color "
        "--colors --type-add --pre-glob",
    ),
    (runs("rg --pre runs a program on every file it searches"), "--pre"),
    valued="--pre",
)
_OPENSSL = _program(
    _opts(
        "-noout -text -subject -issuer -dates -enddate -startdate -serial -fingerprint -hash "
        "-pubkey -modulus -sha1 -sha256 -sha384 -sha512 -md5 -hex -binary -r -c -a -A -base64 "
        "-d -e -nodes -noenc -new -x509 -showcerts -verify_return_error -brief -quiet -tls1_2 "
        "-tls1_3 -pubin -pubout -check -noverify -salt -nosalt -pbkdf2 -help -version -batch "
        "-trusted_first -crlf -status -prexit -ign_eof -no_ign_eof -aes256 -aes128 "
        "-aes-256-cbc -aes-128-cbc -des3 -genkey -partial_chain -x509_strict -no-CAfile "
        "-no-CApath -no-CAstore",
        "-in -out -inform -outform -keyform -certform -nameopt -certopt -ext -key -keyout "
        "-newkey -days -subj -connect -servername -CAfile -CApath -CAstore -untrusted -pass "
        "-passin -passout -k -kfile -iter -md -digest -sign -signature -inkey -algorithm "
        "-pkeyopt -alpn -cert -cipher -ciphersuites -verify_hostname -verify_ip -sess_out "
        "-sess_in -set_serial -extensions -reqexts -addext -CA -CAkey -CAserial -purpose "
        "-host -port -starttls -proxy -name -curve -iv -K -S -macopt -mac -keylen -bits -rand "
        "-writerand -sigopt -vfyopt -auth_level -crl -verify",
        combined=False,
    ),
    (
        runs("openssl -engine/-provider load code (a shared library)"),
        "-engine -provider -provider-path -ssl_client_engine",
    ),
    (
        runs("openssl -config reads a configuration that can load engines and providers"),
        "-config",
    ),
    valued="-engine -provider -provider-path -ssl_client_engine -config",
)
_TCPDUMP = _program(
    _opts(
        "-n -v -X -A -e -q -l -t -U -S -K -D -p -x -N -#",
        "-i -c -w -r -s -C -G -W -y -Z -F -B -j -E -T --time-stamp-precision",
    ),
    (runs("tcpdump -z runs a program on each saved file"), "-z"),
    valued="-z",
)
_COMPILER = _program(
    None,
    (
        runs("the compiler's -wrapper, -fplugin, -B and -specs run or load programs they name"),
        "-wrapper -fplugin* -B* -specs* --specs* -Xclang",
    ),
    valued="-wrapper -Xclang",
)


def _refusing(why: str, names: str, valued: str = "", forms: Forms | None = None) -> Program:
    """A program whose options the table does not list, with the ones it refuses."""
    return _program(None, (runs(why), names), valued=valued, forms=forms)


_SHELLS = "sh bash zsh dash ksh mksh fish csh tcsh ash rbash busybox toybox"
# Commands whose work is running the command they are given.
_WRAPPERS = (
    "xargs sudo doas su runuser pkexec nohup time timeout nice stdbuf watch chroot setsid flock "
    "ionice taskset chrt prlimit numactl cgexec firejail bwrap unshare nsenter setpriv capsh "
    "fakeroot proot faketime unbuffer rlwrap xvfb-run dbus-run-session dbus-launch systemd-run "
    "catchsegv chronic ifne parallel sem entr exec builtin eval strace ltrace valgrind perf "
    "ld.so ssh-agent torsocks proxychains proxychains4 tsocks sg newgrp script expect tmux "
    "screen at batch crontab daemonize start-stop-daemon uvx pipx npx bunx pnpx poetry pdm "
    "hatch rye conda mamba micromamba direnv asdf mise nix-shell nix guix"
)
# Editors, pagers and REPLs: they run shell commands they read (!cmd, :!cmd, .shell …).
_ESCAPES = (
    "vi vim nvim view ex ed red emacs nano pico joe mcedit less more most pg man info gdb lldb "
    "sqlite3 mysql mariadb psql redis-cli mongo mongosh ftp lftp sftp tftp telnet mail mailx "
    "mutt dc m4 tclsh wish jshell irb ghci"
)
# Programs whose work is running programs elsewhere, or a package's scripts.
_ELSEWHERE = (
    "ssh rsh rlogin mosh kubectl helm docker podman nerdctl ansible ansible-playbook terraform "
    "vagrant salt apt apt-get aptitude dpkg rpm yum dnf apk brew snap flatpak zypper pacman "
    "port gem cpan cpanm xdg-open open sensible-browser x-www-browser www-browser service "
    "systemctl launchctl"
)
_CHANGES_THE_SHELL = "export declare typeset readonly local set shopt alias hash enable trap"

PROGRAMS: dict[str, Program] = {
    **{n: _always(f"{n} runs the commands it is given (a shell)") for n in _SHELLS.split()},
    **{n: _always(f"{n} runs the command it is given") for n in _WRAPPERS.split()},
    **{n: _always(f"{n} can run shell commands (!cmd and the like)") for n in _ESCAPES.split()},
    **{
        n: _always(f"{n} runs programs (elsewhere, in containers, or packages' scripts)")
        for n in _ELSEWHERE.split()
    },
    **{
        n: _always(f"{n} changes what the commands after it run (variables, aliases, traps)")
        for n in _CHANGES_THE_SHELL.split()
    },
    "source": _always("source runs the commands of a file"),
    ".": _always(". runs the commands of a file"),
    "compgen": _always("compgen -C/-F runs a command or function"),
    "complete": _always("complete -C/-F runs a command or function"),
    "fc": _always("fc runs commands from the history, after an editor"),
    "env": _program(
        _opts(
            "-0 -i --null --ignore-environment", "-u --unset -C --chdir", first_positional_ends=True
        ),
        (runs("env -S runs the command line it is given"), "-S --split-string"),
        valued="-S --split-string",
        forms=_env,
    ),
    "command": _program(_opts("-v -V -p", first_positional_ends=True), forms=_command),
    **{name: _program(options) for name, options in _PLAIN.items()},
    "cp": _program(_CP_OPTIONS, forms=_merges_into_root("cp", lambda s: s.endswith("/."))),
    "unzip": _program(
        _opts("-o -n -q -l -t -v -j -p -Z -u -f -a -b -C -L -X -z -K -M", "-d -x -P"),
        forms=_unzip,
    ),
    "cpio": _refusing(
        "cpio --rsh-command names the remote-shell program it runs",
        "--rsh-command",
        "--rsh-command",
        forms=_cpio,
    ),
    "ar": Program(forms=_ar),
    **{n: Program(forms=_7z) for n in ("7z", "7za", "7zr")},
    "sed": _SED,
    "awk": _AWK,
    "tar": _TAR,
    "find": _FIND,
    "fd": _refusing("fd -x/-X run a command for each file", "-x --exec -X --exec-batch"),
    "git": _GIT,
    "make": _MAKE,
    "python": _PYTHON,
    "perl": _PERL,
    "ruby": _RUBY,
    "node": _NODE,
    "php": _PHP,
    "lua": _LUA,
    "Rscript": _RSCRIPT,
    "deno": _program(
        None, forms=_subcommand("eval", "repl", "x", why="deno eval/repl/x run code given to them")
    ),
    "npm": _NPM,
    "yarn": _YARN,
    "pnpm": _PNPM,
    "bun": _BUN,
    "pip": _PIP,
    "uv": _UV,
    "curl": _CURL,
    "wget": _WGET,
    "scp": _SCP,
    "rsync": _RSYNC,
    "zip": _ZIP,
    "sort": _SORT,
    "split": _SPLIT,
    "install": _INSTALL,
    "patch": _PATCH,
    "rg": _RG,
    "openssl": _OPENSSL,
    "tcpdump": _TCPDUMP,
    **{n: _COMPILER for n in ("gcc", "cc", "g++", "c++", "clang", "clang++")},
    "sdiff": _refusing(
        "sdiff --diff-program names the program it runs", "--diff-program", "--diff-program"
    ),
    "nc": _refusing("nc -e/-c run a program for the connection", "-e -c", "-e -c"),
    "ncat": _refusing(
        "ncat -e/-c/--sh-exec/--lua-exec run a program for the connection",
        "-e -c --exec --sh-exec --lua-exec",
        "-e -c --exec --sh-exec --lua-exec",
    ),
    "socat": Program(forms=_socat),
    **{
        n: _refusing(f"{n} -U (unsafe mode) lets the document run commands", "-U")
        for n in ("groff", "troff", "nroff")
    },
    "gs": _refusing(
        "gs -dNOSAFER lets PostScript run programs",
        "-dNOSAFER -dDELAYSAFER -dWRITESYSTEMDICT",
        forms=_pipe_names("gs"),
    ),
    **{n: Program(forms=_pipe_names("ImageMagick")) for n in ("convert", "magick", "mogrify")},
    "pandoc": _refusing(
        "pandoc filters and PDF engines are programs (--filter, --lua-filter, --pdf-engine)",
        "-F --filter -L --lua-filter --pdf-engine --pdf-engine-opt",
        "-F --filter -L --lua-filter --pdf-engine --pdf-engine-opt",
    ),
    **{
        n: _refusing(
            f"{n} -shell-escape lets the document run commands",
            "-shell-escape --shell-escape -enable-write18 --enable-write18",
        )
        for n in ("tex", "latex", "pdflatex", "xelatex", "lualatex", "latexmk", "luatex", "pdftex")
    },
    "go": _refusing(
        "go -toolexec/-exec/-vettool run the program they name",
        "-toolexec* -exec* -vettool* --toolexec* --exec* --vettool*",
        forms=_go,
    ),
    "cargo": _refusing(
        "cargo --config sets configuration that runs programs (runners, wrappers)",
        "--config*",
        "--config",
        forms=_subcommand(
            "install", why="cargo install builds fetched crates (their build scripts run)"
        ),
    ),
    "cmake": _refusing("cmake -P/-C run CMake scripts", "-P -C", "-P -C -E", forms=_cmake),
    "gpg": _refusing(
        "gpg --photo-viewer/--exec-path name programs it runs",
        "--photo-viewer --exec-path",
        "--photo-viewer --exec-path",
    ),
    "exiftool": _refusing(
        "exiftool -if/-p evaluate Perl expressions, -@/-config read them from files",
        "-if -p -@ -config -api",
        "-if -p -@ -config -api",
        forms=_exiftool,
    ),
    "aria2c": _refusing("aria2c's --on-* hooks run programs", "--on-*"),
    "yt-dlp": _refusing("yt-dlp --exec runs a command", "--exec*"),
    "youtube-dl": _refusing("youtube-dl --exec runs a command", "--exec*"),
    "hg": _refusing("hg --config can set hooks and aliases (programs)", "--config", "--config"),
    "svn": _refusing(
        "svn --editor-cmd/--diff-cmd/--config-option name programs it runs",
        "--editor-cmd --diff-cmd --diff3-cmd --config-option --config-dir",
        "--editor-cmd --diff-cmd --diff3-cmd --config-option --config-dir",
    ),
}

# Other names of the same programs, by pattern (python3.11 is python, gawk is awk).
_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name)
    for pattern, name in (
        (r"python[0-9.]*m?|pypy[0-9.]*", "python"),
        (r"pip[0-9.]*", "pip"),
        (r"perl[0-9.]*", "perl"),
        (r"ruby[0-9.]*", "ruby"),
        (r"php[0-9.]*(-cli)?", "php"),
        (r"lua[0-9.]*|luajit", "lua"),
        (r"nodejs|node[0-9]+", "node"),
        (r"g?awk|mawk|nawk|busybox-awk|original-awk|one-true-awk", "awk"),
        (r"gsed", "sed"),
        (r"gtar", "tar"),
        (r"gmake", "make"),
        (r"ld-linux.*\.so.*|ld\.so.*|ld-musl.*\.so.*|ld64\.so.*", "ld.so"),
        (r"[rge]?vim(diff)?|vimx|nvi|elvis", "vi"),
        (r"([a-z0-9_]+-linux-gnu-)?(gcc|g\+\+|cc|c\+\+|clang|clang\+\+)(-[0-9.]+)?", "gcc"),
    )
)


def program_name(word: str) -> str:
    """The table's name for a command word: its base name, a versioned or vendor name mapped
    to the program it is (``/usr/bin/python3.11`` → ``python``, ``gawk`` → ``awk``)."""
    base = word.rsplit("/", 1)[-1]
    if base in PROGRAMS:
        return base
    for pattern, name in _NAMES:
        if pattern.fullmatch(base):
            return name
    return base


def hidden_code(argv: Sequence[str]) -> str | None:
    """Why sed, awk or tar, as called, run a program or load code (or sed writes a file) from
    their arguments — as this table reads them (``sed 's|a|b|e'``, ``tar --to-com=sh``, ``awk
    -fprog.awk``) — or None. The ordinary checker asks a person about these, as it asked about
    the forms it matched before (:func:`xsky.security.shell_parse.inline_code`); the table's
    other programs and forms, its unknown options and its guesses (awk's ``|``) are for
    delegated rules only."""
    name = program_name(argv[0])
    program = {"sed": _SED, "tar": _TAR, "awk": replace(_AWK, forms=_awk_loads)}.get(name)
    if program is None:
        return None
    found = evaluate(name, program, tuple(argv[1:]), frozenset(), frozenset())
    if found is None or not (found.kind == "runs" or (name == "sed" and found.kind == "writes")):
        return None  # what else the table finds (tar -x beside .git/) is for delegated rules
    return found.why


_INTERPRETER_NAMES = frozenset({"python", "perl", "ruby", "node", "php", "lua", "deno", "bun"})


def value_code(
    argv: Sequence[str], runtime: frozenset[str], leading: frozenset[str] | None = None
) -> str | None:
    """Why a word known only when the command runs (``runtime``: a ``{{…}}`` value's
    ``"${XSKY_V1}"``, ``$X``, ``$(…)``) is code or an option to sed, awk or tar — or None.

    The checker reads sed's script and awk's program for ``e``, ``w`` and ``system()``; a value
    inside them is text it never sees (``sed "s/a/${XSKY_V1}/"`` with a value ``x/\n1e cmd``
    runs cmd; ``awk "/${XSKY_V1}/"`` with ``x/ || system("cmd") || /y``). A value tar reads
    where it reads options can be one (``tar -xf a.tar "${XSKY_V1}"`` with
    ``--to-command=cmd``)."""
    if not runtime:
        return None
    # ``leading``: of those words, the ones that may begin an option (all, unless the call's
    # values say otherwise: shell_rules._may_lead) — an option is all a program's option
    # reading can make of a word.
    leading = runtime if leading is None else leading
    name = program_name(argv[0])
    args = tuple(argv[1:])
    # (the third review, the fix's own review: each ran a program a value named)
    if name == "make" and any(word in runtime for word in args):
        # make --eval='$(shell cmd)', make VAR='$(shell cmd)' (expanded in a recipe), -f FILE …
        return (
            "make reads a value known only when it runs as an option or a variable "
            "(--eval=$(shell …), VAR=$(shell …))"
        )
    if name == "find":
        # a value where find reads a path or an expression — not an option's value (-name "$V")
        # — can be -delete, -fprint FILE, -exec …
        for i, word in enumerate(args):
            if word in runtime and not (i and args[i - 1].startswith("-") and args[i - 1] != "-"):
                return "find reads a value known only when it runs as a path or an expression (-delete)"
    if name in _INTERPRETER_NAMES:
        # `python3 "$V"`: the script's place, where a value '-cimport os; …' is code
        for i, word in enumerate(args):
            if word in runtime:
                return f"{name} reads a value known only when it runs where it takes code or options (-c…)"
            if name == "python" and word == "-m" and i + 1 < len(args):
                # `python3 -m pytest "{{…}}"`: the module's own options (sec11)
                return value_code(args[i + 1 :], runtime, leading)
            if not word.startswith("-"):
                break
    if name not in ("awk", "make", "find") and name not in _INTERPRETER_NAMES:
        # (a fourth review: `git grep -n "{{…}}"` ran a value '-Ocmd', `git log "{{…}}"` wrote
        # '--output=FILE', `scp "{{…}}" f h:` ran '-oProxyCommand=cmd', `sort "{{…}}" big`
        # '--compress-program=cmd', `sed -n p f "{{…}}"` ran '--expression=1e cmd' — GNU
        # programs read options anywhere before --)
        if found := _value_as_option(name, PROGRAMS.get(name, UNKNOWN), args, leading):
            return found
        if name not in PROGRAMS:
            # a program the table does not know may have any option (sec11: `python3 -m pytest
            # "{{…}}"` imported a module a value '-pNAME' named, `pytest --basetemp=DIR` empties
            # DIR, `eslint --config`/`mypy --config-file` load code): a value that may begin one,
            # before --, is asked for — one that cannot (a URL, a file name) is not
            # (only a {{…}} value's word: `kill $!`, `ls "$HOME"` are no plan's data)
            ended = args.index("--") if "--" in args else len(args)
            if any(word in leading and "XSKY_V" in word for word in args[:ended]):
                return (
                    f"{name} is a program the checker does not know, and a value known only when "
                    "it runs stands where it may read options; put it after --"
                )
    program = {"sed": _SED, "awk": _AWK, "tar": _TAR}.get(name)
    if program is None:
        return None
    spec = program.options or Options(combined=False)
    call = Call(name, args, read(args, spec, frozenset()), frozenset(), frozenset())

    def known_late(script: str) -> bool:
        # the script is a runtime word, or part of one (-e"s/a/${XSKY_V1}/", --expression=…)
        return any(script and script in word for word in runtime)

    if name == "sed":
        scripts = _values(call, "-e", "--expression") or (
            [] if _has(call, "-f", "--file") else list(call.reading.positionals[:1])
        )
        if any(known_late(script) for script in scripts):
            return "sed's script holds a value known only when it runs, which can be its e or w command"
    elif name == "awk":
        if any(known_late(program) for program in _awk_programs(call)):
            return "awk's program holds a value known only when it runs, which can call system()"
    else:
        ended = args.index("--") if "--" in args else len(args)
        # (the value of an option that takes one — tar -xf "$V", -C "$DIR" — is read as that
        # option's value whatever it holds: an archive's or a folder's name, never an option)
        taken = {o.value for o in call.reading.options if o.value is not None and o.word != o.value}
        if any(word in runtime and word not in taken for word in args[:ended]):
            return (
                "tar reads a value known only when it runs where it reads options "
                "(--to-command, --checkpoint-action run programs); put it after --"
            )
    return None


_PROBE = "--xsky-value-known-only-when-it-runs"
# git's tables read option values only attached; these take the next word as their value
# however written (parse-options' required arguments), so a value after them is theirs.
_GIT_REQUIRED_VALUES = {
    "git commit": "-m -F -c -C --message --file --author --date",
    "git tag": "-m -F --message --file",
    "git grep": "-e -f",
    "git checkout": "-b -B",
    "git switch": "-c -C --create --force-create",
    "git branch": "-m -M -c -C",
    "git clone": "-b --branch -o --origin --depth",
    "git notes add": "-m -F",
    "git stash push": "-m --message",
}


def _value_as_option(
    label: str,
    program: Program,
    args: Sequence[str],
    runtime: frozenset[str],
    subcommand: bool = False,
) -> str | None:
    """Why a word that is a value known only when the command runs (``"${XSKY_V1}"``: it
    begins with the value) stands where ``program`` reads options — before ``--``, not an
    option's value — of a program (or subcommand) the table knows options of that run a program
    or write files (and any subcommand of one: ``git log --output=FILE``): a value ``-Ocmd``
    or ``--output=FILE`` there is that option. None for a program with no such options
    (``grep``, ``cat``), and for wrappers, whose command is checked on its own."""
    if program.always is not None:
        return None
    probed = [
        _PROBE if word == _PROBE or (word in runtime and word[:1] in "$`") else word
        for word in args
    ]
    if _PROBE not in probed:
        return None
    spec = program.options or Options(combined=False)
    refused_flags = frozenset(program.refused) - program.valued_refused
    spec = replace(
        spec,
        valued=spec.valued | program.valued_refused,
        flags=(spec.flags | refused_flags) - program.valued_refused,
        first_positional_ends=spec.first_positional_ends or program.subcommands is not None,
    )
    if label in _GIT_REQUIRED_VALUES:
        spec = replace(spec, valued=spec.valued | frozenset(_GIT_REQUIRED_VALUES[label].split()))
    reading = read(probed, spec)
    risky = subcommand or program.refused or program.forms
    if risky and any(o.word == _PROBE for o in reading.options):
        shown = ", ".join(sorted(n for n in program.refused if not n.endswith("*"))[:3])
        return (
            f"{label} reads a value known only when it runs where it reads options"
            + (f" ({shown} …)" if shown else "")
            + ", which can run a program or write a file; put it after --"
        )
    if program.subcommands is not None and reading.positionals:
        sub, rest = reading.positionals[0], reading.positionals[1:]
        if sub == _PROBE:
            return f"{label}'s subcommand is a value known only when it runs"
        inner = program.subcommands.get(sub, program.other or UNKNOWN)
        return _value_as_option(f"{label} {sub}", inner, rest, frozenset({_PROBE}), True)
    return None


def finding(
    argv: Sequence[str],
    known: frozenset[str] = frozenset(),
    expanded: frozenset[str] = frozenset(),
) -> Finding | None:
    """What keeps a delegated rule from vouching for ``argv``, the worst first (a form that runs
    a program, one that writes, a script that cannot be read, an unknown option), or None.

    ``known``: words the delegated rules that cover the call write themselves; ``expanded``:
    words of it the shell expands (globs, braces), which no script may be."""
    name = program_name(argv[0])
    return evaluate(name, PROGRAMS.get(name, UNKNOWN), tuple(argv[1:]), known, expanded)


def evaluate(
    label: str,
    program: Program,
    args: Sequence[str],
    known: frozenset[str],
    expanded: frozenset[str],
) -> Finding | None:
    """``program`` (or a subcommand of one, ``label`` naming it) called with ``args``."""
    if program.always is not None:
        return program.always
    spec = program.options or Options(combined=False)  # None: each word is read whole
    refused_flags = frozenset(program.refused) - program.valued_refused
    spec = replace(
        spec,
        valued=spec.valued | program.valued_refused,
        flags=(spec.flags | refused_flags) - program.valued_refused,
        first_positional_ends=spec.first_positional_ends or program.subcommands is not None,
    )
    reading = read(args, spec, known)
    call = Call(label, tuple(args), reading, known, expanded)
    found = [f for f in (_refusal(program, o.name) for o in reading.options) if f is not None]
    found += [f for f in (_prefixed(program, w) for w in _option_words(args)) if f is not None]
    if program.forms is not None and (form := program.forms(call)) is not None:
        found.append(form)
    if program.subcommands is not None and reading.positionals:
        sub, rest = reading.positionals[0], reading.positionals[1:]
        inner = program.subcommands.get(sub, program.other or UNKNOWN)
        if (deeper := evaluate(f"{label} {sub}", inner, rest, known, expanded)) is not None:
            found.append(deeper)
    for option in reading.unknown:
        if _refusal(program, option.name) is None and _prefixed(program, option.word) is None:
            found.append(
                Finding(
                    "unknown",
                    f"option {option.name} of {label} is not known to the checker",
                    f"a delegated rule that writes it, e.g. shell({label} {option.word[:40]}:*), "
                    "makes it known",
                )
            )
            break
    return min(found, key=lambda f: f.rank) if found else None


def _refusal(program: Program, name: str) -> Finding | None:
    if name in program.refused:
        return program.refused[name]
    known = program.options is not None and program.options.knows(name)
    if name.startswith("--") and len(name) >= 4 and not known:
        # getopt_long takes an unambiguous prefix: --to-com=sh is --to-command=sh
        for full, refused in program.refused.items():
            if full.startswith(name):
                return refused
    return None


def _prefixed(program: Program, word: str) -> Finding | None:
    """A refusal written ``-fplugin*`` refuses every word that starts so."""
    for name, refused in program.refused.items():
        if name.endswith("*") and word.startswith(name[:-1]):
            return refused
    return None


def _option_words(args: Sequence[str]) -> list[str]:
    out = []
    for word in args:
        if word == "--":
            break
        if word.startswith("-"):
            out.append(word)
    return out
