"""What a shell command really runs: every simple command in it, found by a bash parser.

``ls && rm -rf x`` is two commands; so are ``ls; rm -rf x``, ``ls | sh``, ``echo $(rm -rf x)``,
backticks, a second line, subshells, loops and functions. ``FOO=1 rm -rf x`` runs ``rm``;
``bash -c "rm -rf x"``, ``eval …``, ``env``, ``sudo``, ``xargs``, ``timeout`` … run what they
wrap, so that is checked too. Redirections are file reads and writes. A command whose name
is only known at run time (``$CMD``) or text that does not parse cannot be checked: it is
refused (fail closed) by raising :class:`ShellParseError`.
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from xsky.security.program_forms import hidden_code, program_name

SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "rbash", "mksh"}
# …and, since 0.12.5's reading, these (sec14: `fish -c 'touch ran'`, `tcsh -c …`, `csh -c …`,
# `busybox ash -c …` ran touch past deny shell(touch:*), and a value piped to each ran as
# commands: no table knew them as shells)
_SHELLS_0125 = frozenset({"fish", "csh", "tcsh", "ash", "yash", "posh", "ksh93", "bsh"})


def _is_shell(name: str) -> bool:
    return name in SHELLS or (name in _SHELLS_0125 and _reads_as_of((0, 12, 5)))


# fish's options whose value is the next word (or the rest of a cluster, or after '='): code
# to run (-c, -C), and the rest
_FISH_CODE = ("--command", "--init-command")
_FISH_VALUED = "cCpdof"
# Commands that run another command given as their arguments: for each, the options that
# take a value, and how many positional arguments come before the wrapped command.
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "sudo": (
        frozenset({"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D", "--user", "--group"}),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "xargs": (
        frozenset(
            {"-I", "-i", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs"}
        ),
        0,
    ),
    "command": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "builtin": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "watch": (frozenset({"-n", "--interval", "-d"}), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "setsid": (frozenset(), 0),
    "busybox": (frozenset(), 0),
    "flock": (frozenset({"-w", "--timeout", "-E", "-c"}), 1),
    "ionice": (frozenset({"-c", "-n", "-p"}), 0),
    # (a third review: each of these ran its command unseen by any rule)
    "taskset": (frozenset(), 1),
    "chrt": (
        frozenset({"-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"}),
        1,
    ),
    "prlimit": (frozenset({"-p", "--pid", "-o", "--output"}), 0),
    "setpriv": (
        frozenset(
            {
                "--reuid",
                "--regid",
                "--groups",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--securebits",
                "--pdeathsig",
                "--selinux-label",
                "--apparmor-profile",
            }
        ),
        0,
    ),
    "runuser": (
        frozenset({"-u", "-g", "-G", "--user", "--group", "--supp-group", "-s", "--shell", "-w"}),
        0,
    ),
    "strace": (
        frozenset(
            {
                "-o",
                "--output",
                "-e",
                "-p",
                "--attach",
                "-s",
                "--string-limit",
                "-u",
                "--user",
                "-E",
                "--env",
                "-a",
                "-b",
                "-I",
                "-O",
                "-S",
                "-P",
                "-X",
                "-U",
            }
        ),
        0,
    ),
    "ltrace": (
        frozenset(
            {
                "-o",
                "--output",
                "-e",
                "-p",
                "-s",
                "-u",
                "-a",
                "-A",
                "-D",
                "-n",
                "-F",
                "-l",
                "-w",
                "-x",
            }
        ),
        0,
    ),
    "unbuffer": (frozenset(), 0),
    "fakeroot": (frozenset({"-l", "--lib", "--faked", "-s", "-i", "-b"}), 0),
}
_MAX_DEPTH = 8
_MAX_MAYBE_PROGRAMS = 16  # (`uv run --with a --with b … pytest`: each value may be the program)
_PLAIN_ARITHMETIC = re.compile(r"^[\s\d+\-*/%()<>=!&|^~?:]*$")


class ShellParseError(ValueError):
    """The command cannot be fully understood (``forbidden``: it is understood, and refused)."""

    def __init__(self, message: str, forbidden: bool = False):
        super().__init__(message)
        self.forbidden = forbidden


@dataclass(frozen=True)
class Redirect:
    op: str  # ">", ">>", "<", …
    target: str


@dataclass
class ShellCommand:
    argv: list[str]
    redirects: list[Redirect] = field(default_factory=list)
    # How the shell changes the words before the program sees them: facts of how the command is
    # written, not of what it runs, so they do not count in comparisons. The variables set for
    # this command alone (`A=1 cmd`), and by argv index the words the shell expands: "runtime"
    # ($x, $(…), `…`: known only when it runs) or an unquoted * ? [ { naming files — "glob", or
    # "glob-start" where the expansion can begin the word, so a file name can become an option.
    # Commands found inside a wrapper's arguments (`env cmd`, `find -exec cmd`) carry their
    # words' expansions, by index into their own argv, and no assignments.
    assignments: list[str] = field(default_factory=list, compare=False)
    expansions: dict[int, str] = field(default_factory=dict, compare=False)
    # Of the "runtime" words, those whose every expansion is inside "…" with nothing outside
    # quotes the shell splits or globs: what they expand to is one word, as it is.
    quoted: set[int] = field(default_factory=set, compare=False)
    # A command a package or environment runner runs (`npx touch x`, `uv run pytest`): the
    # runner's own part. Deny and ask rules decide it as any command; the rest of its decision
    # is the runner's when a rule allowed the runner (shell_rules._runner_vouched).
    run_by: ShellCommand | None = field(default=None, compare=False, repr=False)
    # A runner's word read as an option's value that may be the program it runs instead (npm
    # reads an option it does not know as a flag: `npx --no-install touch x` runs touch): only
    # deny and ask rules decide it.
    maybe: bool = field(default=False, compare=False)

    @property
    def text(self) -> str:
        return " ".join(self.argv)


VALUE_NAME = "XSKY_V"  # a {{…}} value's shell variable (xsky.plan.variables.SHELL_VALUE)
_READS_INPUT = " (reading commands from its input)"
# Whether the command being split holds a {{…}} value: then a command line a shell runs that the
# outer shell expands first (`bash -c "… $X …"`) may be made of the value, which is code there.
_HOLDS_VALUES: contextvars.ContextVar[bool] = contextvars.ContextVar("holds_values", default=True)
# The commands runners run that the command being split holds, by their words and expansions:
# each is read once (`npx -a npx -a npx … touch` may name its program at each word, and each of
# those again: sec13b, 2^k readings otherwise).
_RUNNERS_RUN: contextvars.ContextVar[dict[tuple[Any, ...], ShellCommand] | None] = (
    contextvars.ContextVar("runners_run", default=None)
)
# The leader's own decisions (delegated approvals, "allow for this run" rules) are workflow code:
# a run replays them as they were made, so the reading of each release that changed it can be
# asked for (xsky/leader's callers ask the patch that guards each change, where it decides apart).
# 0.12.0 (patch shell-words-as-bash-reads): words as bashlex gives them, a wrapped command
# without its words' expansions, no command line refused for being made of what the shell
# expands. 0.12.1 (patch shell-reading-round-11): wrapper options by their listed words alone, a
# shell's input and an interpreter's not read, no xargs input, $'…' words as bashlex gives them.
# 0.12.2 (patch shell-reading-round-12): a versioned interpreter's, make -f -'s, jshell's and
# tclsh's input not read, and the input only as /dev/stdin, /dev/fd/…, /proc/self/fd/… spelled so;
# make --eval's text not code; values given to a package runner's program not asked for.
# 0.12.3 (patch shell-reading-round-13): chroot's, sudo -s's and runuser USER's shell, python -m
# pdb/cProfile/profile/trace's, -Em code's, perl -d's, node --title x's and tclsh -encoding's
# input not read; the input linked to a name or a file written, then run, not read; python -m
# timeit's and pdb -c's arguments not code; an interpreter's script's own words read as its
# options (python3 tool.py -c x asked), python's -I taking a word; ssh's option values counted
# as a remote command's words (ssh -p 2222 host asked); the program a package or environment
# runner runs no command of its own (`npx touch x` past deny shell(touch:*)).
# 0.12.4 (patch shell-reading-round-14): a runner's command line run by a shell (mise exec -c,
# pnpm -c/--shell-mode exec, yarn exec's first word, pixi run, devbox run) and pnpm's implied
# exec (`pnpm touch x`) not read; nix shell/develop, nix-shell, devbox/pixi/pipenv/poetry/hatch
# shell given no command not read as a shell reading its input.
# 0.12.5 (patch shell-reading-round-15): a subcommand's readings stop at docker's `--` before
# it, at an option between a rule's subcommand words (gh pr -R o/r merge), and know no alias
# (helm del, npm un/pu, docker volume remove, nerdctl container run, terraform apply -destroy);
# a file written then read as code by pytest (any .py), tox, rake, just, task, invoke, gradlew,
# pre-commit, mkdocs, sphinx-build, or run by an existing makefile's or package.json's task, not
# read.
_READ_AS: contextvars.ContextVar[tuple[int, ...] | None] = contextvars.ContextVar(
    "read_as", default=None
)


def _reads_as_of(version: tuple[int, ...]) -> bool:
    """Does the reading in force hold what ``version`` changed? (The newest holds all.)"""
    release = _READ_AS.get()
    return release is None or release >= version


@contextlib.contextmanager
def read_as_of(release: tuple[int, ...]) -> Iterator[None]:
    """Commands split inside this block are read as xsky ``release`` read them."""
    token = _READ_AS.set(release)
    try:
        yield
    finally:
        _READ_AS.reset(token)


reads_as_of = _reads_as_of  # (shell_rules: its own readings changed by a release)


def read_as_in_v0120() -> contextlib.AbstractContextManager[None]:
    """Commands split inside this block are read as xsky 0.12.0 read them."""
    return read_as_of((0, 12, 0))


def split_command(command: str) -> list[ShellCommand]:
    """Every simple command ``command`` would run, in order. Raises ShellParseError."""
    out: list[ShellCommand] = []
    token = _HOLDS_VALUES.set(VALUE_NAME in command)
    run = _RUNNERS_RUN.set({})
    try:
        _parse_into(command, out, 0)
    finally:
        _RUNNERS_RUN.reset(run)
        _HOLDS_VALUES.reset(token)
    if not out:
        raise ShellParseError("the command is empty")
    if (
        _reads_as_of((0, 12, 1))
        and VALUE_NAME in command
        and any(p.argv[0].endswith(_READS_INPUT) for p in out)
    ):
        # `printf %s "{{…}}" | sh`, `bash <<< "… {{…}}"`: the value is read as commands
        raise ShellParseError(
            "a shell reads its commands from its input in a command that holds a {{…}} value, "
            "which it would read as code; pass values as arguments — it cannot be checked"
        )
    if _reads_as_of((0, 12, 4)) and VALUE_NAME in command and (why := _made_here(out)):
        raise ShellParseError(
            f"{why} in a command that holds a {{{{…}}}} value, which it may read as code; pass "
            "values as arguments — it cannot be checked"
        )
    _refuse_array_values(out)
    return out


_LINKERS = frozenset({"ln", "cp", "link", "mv", "install", "mkfifo"})


def _script_made_here(parts: list[ShellCommand]) -> str | None:
    """Why a script a shell or an interpreter of this command runs may be what the command
    gave it: the input given a name (`ln -s /dev/stdin f; … | python3 f`), or a file a
    redirection or tee writes (`printf %s "{{…}}" > f.sh; bash f.sh`) — sec13: each ran a
    value as code past deny shell(touch:*) — or None."""
    written: set[str] = set()
    for part in parts:
        name = program_name(part.argv[0])
        args = part.argv[1:]
        named = [a for a in args if not a.startswith("-")]
        if name in _LINKERS and any(_input_script(a) for a in named):
            return f"{name} gives the command's input ({' '.join(part.argv)[:40]!r}) a name"
        if name in _LINKERS and any("$" in a or "`" in a for a in named[:-1]):
            # (`ln -s $d/stdin f`: what it links is known only when it runs)
            written.add(posixpath.normpath(named[-1]))
        written.update(posixpath.normpath(r.target) for r in part.redirects if ">" in r.op)
        if name == "tee":
            written.update(posixpath.normpath(a) for a in named)
        if name == "dd":
            written.update(posixpath.normpath(a[3:]) for a in args if a.startswith("of="))
    for part in parts:
        script = _script_word(part.argv)
        rcfile = (
            _shell_rcfile(part.argv[1:])
            if _named(part.argv[0]) in SHELLS and _reads_as_of((0, 12, 5))
            else None
        )
        for runs in (script, rcfile):
            if runs is not None and posixpath.normpath(runs) in written:
                return f"{part.argv[0]} runs {runs!r}, a file the same command writes"
        if "/" in part.argv[0] and posixpath.normpath(part.argv[0]) in written:
            return f"the command runs {part.argv[0]!r}, a file it writes"  # (`./f.sh`)
    return None


def _made_here(parts: list[ShellCommand]) -> str | None:
    """_script_made_here, and since 0.12.5 its wider reading (_made_here_14)."""
    why = _script_made_here(parts)
    if why is None and _reads_as_of((0, 12, 5)):
        why = _made_here_14(parts)
    return why


# Files a build or package tool reads as code where it runs (a makefile's $(shell …), a
# package.json's scripts, setup.py, CMakeLists.txt's execute_process, build.rs, conftest.py)
_PROJECT_FILES: dict[str, tuple[str, ...]] = {
    "make": ("Makefile", "makefile", "GNUmakefile", "*.mk"),
    "cmake": ("CMakeLists.txt", "*.cmake"),
    **dict.fromkeys(
        ("npm", "npx", "pnpm", "pnpx", "yarn", "bun", "bunx", "corepack"),
        ("package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "*.js", "*.mjs",
         "*.cjs", "*.ts"),
    ),
    **dict.fromkeys(
        ("pip", "pipx", "uv", "uvx", "poetry", "pdm", "hatch", "rye", "pipenv", "tox", "nox",
         "pytest", "py.test"),
        ("setup.py", "pyproject.toml", "setup.cfg", "conftest.py", "noxfile.py", "*.pth"),
    ),
    "go": ("*.go", "go.mod"),
    "cargo": ("Cargo.toml", "build.rs", "*.rs", "config.toml"),
    **dict.fromkeys(("mvn", "gradle", "ant", "sbt"), ("pom.xml", "*.gradle", "*.kts", "build.xml")),
    **dict.fromkeys(("java", "jshell", "tclsh", "wish", "expect", "Rscript", "deno"), ()),
    # an interpreter imports the modules of its script's folder (review18: `> helpers.py;
    # python3 main.py`, main importing helpers, ran the value)
    "python": ("*.py", "*.pth"),
    "node": ("*.js", "*.mjs", "*.cjs"),
    "ruby": ("*.rb",),
    "perl": ("*.pm", "*.pl"),
}  # fmt: skip
# (0.12.6) what else reads a project's files as code (sec15: each ran a {{…}} value written to
# one past deny shell(touch:*), allowed): pytest collects test_*.py and imports what they import
# (`> helpers.py; pytest`, `> test_x.py; pytest`), tox and nox run the project's tests, rake a
# Rakefile, just a justfile, task a Taskfile, invoke tasks.py, gradlew/mvnw the build, pre-commit
# its hooks, mkdocs its hooks, sphinx-build conf.py, coverage and ipython Python
_PROJECT_FILES_15: dict[str, tuple[str, ...]] = {
    **_PROJECT_FILES,
    **dict.fromkeys(
        ("pytest", "py.test", "tox", "nox", "hatch", "coverage", "ipython"),
        (*_PROJECT_FILES["pytest"], "*.py", "pytest.ini", "tox.ini", ".coveragerc"),
    ),
    "rake": ("Rakefile", "rakefile", "Rakefile.rb", "*.rake", "*.rb"),
    "bundle": ("Gemfile", "Rakefile", "rakefile", "*.rake", "*.rb"),
    "just": ("justfile", "Justfile", ".justfile", "*.just"),
    "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml",
             "Taskfile.dist.yml", "Taskfile.dist.yaml"),
    **dict.fromkeys(("invoke", "inv"), ("tasks.py", "invoke.yaml", "invoke.yml", "*.py")),
    **dict.fromkeys(("gradlew", "mvnw"), _PROJECT_FILES["gradle"]),
    "pre-commit": (".pre-commit-config.yaml", "*.py", "*.sh"),
    "mkdocs": ("mkdocs.yml", "mkdocs.yaml", "*.py"),
    "sphinx-build": ("conf.py", "*.py"),
}  # fmt: skip
# (0.12.6) programs that run the project's own tasks, whatever files those run: a source file
# the command writes may be what an existing makefile's or package.json's task runs (sec15: `>
# src/x.py; make test`, its Makefile running python3 src/x.py, ran the value). A file of a
# data kind (`> report.md && make docs`: round 14's false ask) is not code.
_TASK_RUNNERS = frozenset(
    "make gmake npm pnpm yarn bun tox nox rake bundle just task invoke inv gradle gradlew mvn "
    "mvnw ant sbt pre-commit hatch".split()
)
_CODE_FILES = tuple(
    f"*.{ext}"
    for ext in "py pyc pth js mjs cjs ts mts cts jsx tsx rb rake pl pm php sh bash zsh lua go rs "
    "java kt kts scala groovy gradle c cc cpp cxx h hpp mk cmake r R jl ex exs".split()
)
# Compilers, and where their program goes when no -o names it
_COMPILERS = {"gcc": "a.out", "cc": "a.out", "clang": "a.out", "tcc": "a.out", "rustc": "",
              "javac": "", "go": ""}  # fmt: skip
_SPLITTERS = {"split": "x", "csplit": "xx"}
_FETCHERS = {"curl": ("-o", "--output"), "wget": ("-O", "--output-document")}
# Programs that write their output to the file an option names
_OUTPUT_OPTIONS = {
    "sort": ("-o", "--output"), "shuf": ("-o", "--output"), "iconv": ("-o", "--output"),
    "patch": ("-o", "--output"),
}  # fmt: skip
# A brace expansion in a word (`{f,g}.sh`, `f{1..3}.sh`): read as a glob of what it makes
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")


def _made_here_14(parts: list[ShellCommand]) -> str | None:
    """A program the command runs that may be what the command wrote (sec14: each ran a value
    as code past deny shell(touch:*), allowed): the file copied, moved or linked first (`> a;
    cp a f.sh; bash f.sh`), named by another path (`bash "$PWD/f.sh"`, `cd d && bash f.sh`), a
    glob or a word known only at run time (`bash *.sh`), written by split or csplit, or fetched
    by curl -o/wget -O; compiled, then run (`gcc x.c && ./a.out`, `javac`, `go build`); or read
    as code by a program no shell or interpreter of the table — java A.java, tclsh, make (a
    makefile), npm/pnpm/yarn (package.json), pip/uv/poetry (setup.py, pyproject.toml), pytest
    (conftest.py), cmake, cargo, go run/test/generate, python -m MODULE. Files are compared by
    their names (the last part of a path)."""
    names: set[str] = set()  # the names of the files written
    patterns: set[str] = set()  # (split's: its prefix, then letters)
    unknown = False  # a file written whose name is known only at run time

    def write(word: str) -> None:
        nonlocal unknown
        if "$" in word or "`" in word or any(c in word for c in "*?["):
            unknown = True
        name = posixpath.basename(posixpath.normpath(word))
        if _BRACES.search(name):  # (`tee {f,g}.sh`: each name the braces make)
            patterns.add(_BRACES.sub("*", name))
        names.add(name)

    def made(word: str) -> bool:
        if "$" in word or "`" in word or "{}" in word:  # (find's -exec {}: a file it found)
            return bool(names or patterns or unknown)
        name = _BRACES.sub("*", posixpath.basename(posixpath.normpath(word)))
        if any(c in name for c in "*?["):
            return any(fnmatch.fnmatchcase(n, name) for n in names) or bool(patterns or unknown)
        return (
            name in names
            or any(fnmatch.fnmatchcase(name, p) for p in patterns)
            or (unknown and "/" in word)
        )

    for part in parts:
        name = program_name(part.argv[0])
        args = part.argv[1:]
        named = [a for a in args if not a.startswith("-")]
        for r in part.redirects:
            if ">" in r.op and r.target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
                if not r.target.isdigit() and not r.target.startswith("&"):
                    write(r.target)
        if name in ("tee", "sponge"):
            for a in named:
                write(a)
        if name == "dd":
            for a in args:
                if a.startswith("of="):
                    write(a[3:])
        if name in _LINKERS | {"rsync", "link", "rename", "unzip", "tar"} and any(
            made(a) for a in named
        ):
            for a in named:
                if not a.endswith("/"):  # (`cp a.txt docs/`: a folder, where a.txt lands)
                    write(a)
            # (what they unpack: its own names — not `tar czf out.tgz a.txt`, which packs)
            unknown = unknown or name == "unzip" or (name == "tar" and _tar_extracts(args))
        if name in _SPLITTERS:
            prefix = named[-1] if len(named) > 1 else _SPLITTERS[name]
            if name == "csplit":
                prefix = next(
                    (args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-f", "--prefix")),
                    "xx",
                )
            patterns.add(posixpath.basename(prefix) + "*")
        if name in _OUTPUT_OPTIONS:  # (`sort f.txt -o f.sh`, `iconv -o f.sh`)
            flags = _OUTPUT_OPTIONS[name]
            for i, a in enumerate(args):
                if a in flags and i + 1 < len(args):
                    write(args[i + 1])
                elif a.startswith("--output="):
                    write(a[len("--output=") :])
                elif a[:2] in flags and len(a) > 2 and not a.startswith("--"):
                    write(a[2:])
        if name in ("uniq", "xxd"):  # (their second operand is the file they write)
            for a in named:
                write(a)
        if name in _FETCHERS:
            flags = _FETCHERS[name]
            for i, a in enumerate(args):
                if a in flags and i + 1 < len(args):
                    write(args[i + 1])
                elif any(a.startswith(f) and len(a) > len(f) for f in flags):
                    value = a.split("=", 1)[1] if a.startswith("--") else a[2:]
                    if value:
                        write(value)
        if name in _COMPILERS and any(made(a) for a in named):
            out = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "-o"), None)
            if out is None:
                out = next((a[2:] for a in args if a.startswith("-o") and len(a) > 2), None)
            if out is not None:
                write(out)
            elif name == "javac":
                for a in named:
                    write(posixpath.splitext(a)[0] + ".class")
            elif name in ("rustc", "go"):
                for a in named:
                    write(posixpath.splitext(a)[0])
                if name == "go":
                    unknown = True  # (go build names its program for its module)
            else:
                write(_COMPILERS[name])
    if not (names or patterns or unknown):
        return None
    for part in parts:
        name = program_name(part.argv[0])
        args = part.argv[1:]
        run = [w for w in (_script_word(part.argv),) if w is not None]
        if "/" in part.argv[0] or any(c in part.argv[0] for c in "*?[{"):
            run.append(part.argv[0])
        run += _startup_files(_named(part.argv[0]), args)
        if name == "python":
            _, module = _interpreter_own_words(part.argv[0], args)
            if module:
                run.append(module.split(".", 1)[0] + ".py")
                if module in ("pytest", "pip", "build", "setup"):
                    name = "pytest" if module == "pytest" else "pip"
        if name in ("java", "jshell", "tclsh", "wish", "expect", "Rscript"):
            # the program: the first word past the options (a source file, a class), and the
            # values of java's options that name one (-jar, -cp) — not the program's own words
            words = iter(args)
            for a in words:
                if a in ("-jar", "-cp", "-classpath", "--class-path", "-encoding"):
                    run.append(next(words, ""))
                    if a == "-jar":
                        break
                elif not a.startswith("-"):
                    run += [a, a + ".class"]
                    break
        elif name == "psql":
            run += _psql_files(args)  # (`> x.sql; psql -f x.sql`: its \! runs commands)
        elif name in ("make", "cmake", "go", "cargo"):
            run += [a for a in args if not a.startswith("-")]
            run += [a.split("=", 1)[1] for a in args if a.startswith("-") and "=" in a]
            run += [a[2:] for a in args if a[:2] in ("-f", "-C") and len(a) > 2]
        table = _PROJECT_FILES_15 if _reads_as_of((0, 12, 6)) else _PROJECT_FILES
        if name in table:
            if any(fnmatch.fnmatchcase(n, p) for n in names for p in table[name]):
                return f"{part.argv[0]} reads files the same command writes as code"
        if _reads_as_of((0, 12, 6)) and name in _TASK_RUNNERS:
            if unknown or any(fnmatch.fnmatchcase(n, p) for n in names for p in _CODE_FILES):
                return (
                    f"{part.argv[0]} runs the project's tasks, which may run a file the same "
                    "command writes"
                )
        for word in run:
            if made(word):
                return f"{part.argv[0]} runs {word[:40]!r}, which may be a file the same command writes"
    return None


# The files a shell runs as it starts, from its home folder — the workspace, where the sandbox
# sets HOME, or any folder a `HOME=…` before it names: bash's .bashrc when interactive (-i),
# a login shell's (-l, --login) profiles, zsh's .zshenv always, fish's config.fish always
_STARTUP_INTERACTIVE = (".bashrc", ".kshrc", ".mkshrc", ".zshrc")
_STARTUP_LOGIN = (".bash_profile", ".bash_login", ".profile", ".zprofile", ".zlogin")


def _startup_files(name: str, args: list[str]) -> list[str]:
    """The names of the startup files shell ``name`` given ``args`` reads as commands (review18:
    `printf %s "{{…}}" > .bashrc; bash -ic true` — HOME the workspace, or `HOME=. bash -ic` —
    ran the value past deny shell(touch:*), allowed; only --rcfile's file was read)."""
    if not _is_shell(name):
        return []
    if name == "fish":
        return ["config.fish"]
    letters, end, _ = _shell_options(args)
    files = [".zshenv"] if name == "zsh" else []
    if "i" in letters:
        files += _STARTUP_INTERACTIVE
    if "l" in letters or "--login" in args[:end]:
        files += _STARTUP_LOGIN
    return files


def _tar_extracts(args: list[str]) -> bool:
    """Does tar given ``args`` unpack (-x, --extract, --get, or x in its first word's letters,
    dashed or not) — or may it (an option the checker cannot read)?"""
    if not args:
        return False
    first = args[0]
    if not first.startswith("-") and "x" in first:
        return True  # (`tar xzf a.tgz`)
    for a in args:
        if a in ("--extract", "--get") or (a[:1] == "-" and a[1:2] != "-" and "x" in a[1:]):
            return True
    return not any(
        a in ("--create", "--list", "--append")
        or (a[:1] == "-" and a[1:2] != "-" and any(c in a[1:] for c in "ctr"))
        or (not a.startswith("-") and a is first and any(c in a for c in "ctr"))
        for a in args
    )


def _script_word(argv: list[str]) -> str | None:
    """The script a shell or an interpreter is given (its first word past its options)."""
    name = _named(argv[0])
    args = argv[1:]
    if name == "fish" and _is_shell(name):
        lines, i = _fish_options(args)
    elif _is_shell(name):
        _, i, _ = _shell_options(args)
    elif name in INTERPRETERS or name in ("source", "."):
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "-":
            i += 2 if args[i] in _INTERPRETER_VALUED else 1
    else:
        return None
    return args[i] if i < len(args) else None


# bash's own arrays: a declarer's value given to one is read as `(…)` like any array's
_BASH_ARRAYS = frozenset(
    {
        "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_CMDS", "BASH_LINENO", "BASH_REMATCH",
        "BASH_SOURCE", "BASH_VERSINFO", "COMP_WORDS", "COPROC", "DIRSTACK", "FUNCNAME",
        "GROUPS", "PIPESTATUS",
    }
)  # fmt: skip


def _refuse_array_values(parts: list[ShellCommand]) -> None:
    """``declare -a a="${XSKY_V1}"`` (also local, typeset, readonly, export; -A; a name made an
    array anywhere in the command, ``declare a=…`` after ``declare -a a``; ``"a=(${XSKY_V1})"``):
    bash reads a value that looks like ``(…)`` given to an array by a declarer as a compound
    assignment and expands it again — a value ``($(cmd))`` runs cmd. Checked with real bash.
    The whole command is looked at: the name may be made an array before or after (a function)."""
    arrays = set(_BASH_ARRAYS)
    for part in parts:
        name, args = part.argv[0], part.argv[1:]
        options = "".join(a[1:] for a in args if a[:1] == "-" and not a.startswith("--"))
        if name in _DECLARERS and ("a" in options or "A" in options):
            arrays |= {a.split("=", 1)[0].split("[", 1)[0] for a in args if a[:1] not in "-+"}
        elif name in ("read", "mapfile", "readarray"):
            names = [a for a in args if a[:1] != "-"]
            if name != "read" or "a" in options:
                arrays |= set(names[-1:])
    for part in parts:
        name, args = part.argv[0], part.argv[1:]
        if name not in _DECLARERS:
            continue
        options = "".join(a[1:] for a in args if a[:1] == "-" and not a.startswith("--"))
        for arg in args:
            target, eq, value = arg.partition("=")
            if not eq or arg[:1] in "-+" or not ("$" in value or "`" in value):
                continue
            target = target.rstrip("+").split("[", 1)[0]
            if "a" in options or "A" in options or target in arrays or value.startswith("("):
                raise ShellParseError(
                    f"{name} {arg[:60]!r} gives an array a value known only at run time, which "
                    "bash reads again as `(…)` (a value '($(cmd))' runs cmd); it cannot be checked"
                )


def _strip_arithmetic(command: str) -> str:
    """Replace each ``$(( … ))`` with a number and each ``(( … ))`` command with ``:``.

    bashlex cannot parse arithmetic. Arithmetic runs no command — unless it names a
    variable, which bash expands recursively (``x='a[$(cmd)]'; ((x))`` runs cmd), or holds
    a substitution: anything but numbers and operators is refused.
    """
    out = []
    i = 0
    while True:
        start = command.find("((", i)
        if start < 0:
            out.append(command[i:])
            return "".join(out)
        dollar = start > 0 and command[start - 1] == "$"
        depth, j = 2, start + 2
        while j < len(command) and depth:
            depth += {"(": 1, ")": -1}.get(command[j], 0)
            j += 1
        if depth:
            raise ShellParseError("an arithmetic expression (( … )) is not closed")
        inner = command[start + 2 : j - 2]
        if not _PLAIN_ARITHMETIC.match(inner):
            raise ShellParseError(
                f"(( {inner.strip()[:40]} )) uses more than numbers and operators; it cannot be checked"
            )
        out.append(command[i : start - 1] + "0" if dollar else command[i:start] + ":")
        i = j


_bashlex: ModuleType | None = None


def load_parser() -> ModuleType:
    """bashlex, imported when first needed: its parser tables take 70 ms to build, which a
    command line that checks no command (``status``, ``validate``) should not pay. The worker
    calls this as it starts, so a workflow's sandbox never imports a copy of its own."""
    global _bashlex
    if _bashlex is None:
        import bashlex
        import bashlex.errors

        _bashlex = bashlex
    return _bashlex


def _parse_into(command: str, out: list[ShellCommand], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ShellParseError("commands nest too deeply to check")
    plain = _strip_arithmetic(command)
    bashlex = load_parser()
    try:
        trees = bashlex.parse(plain)
    # bashlex raises RuntimeError subclasses for syntax it does not support (and for input
    # nested too deeply to recurse through): either way the command cannot be checked.
    except (
        bashlex.errors.ParsingError,
        RuntimeError,
        IndexError,
        AttributeError,
        TypeError,
        ValueError,
    ) as e:
        raise ShellParseError(
            f"the command cannot be parsed ({e}); write it as plain commands"
        ) from None
    for tree in trees:
        _walk(tree, plain, out, depth)  # node positions are into the text bashlex parsed


# Variables that change what a command does without showing in its name or arguments.
DANGEROUS_VARIABLES = re.compile(
    r"^(LD_\w*|DYLD_\w*|PATH|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|GLOBIGNORE|CDPATH|"
    r"BASH_FUNC_.*|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|PERL5OPT|PERL5LIB|RUBYOPT|NODE_OPTIONS|GIT_\w*|EDITOR|VISUAL|PAGER)$"
)
_DECLARERS = {"export", "declare", "typeset", "local", "readonly"}
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")


def _refuse_expansion(value: str, what: str) -> None:
    """Expansions that can run commands when bash expands them are refused, not guessed."""
    # ${!name} is indirection (the value names another variable); $! alone is a pid.
    if _SUBSTITUTION.search(value) or "@P" in value or (value.startswith("!") and len(value) > 1):
        raise ShellParseError(
            f"{what} {value[:60]!r} could run commands when expanded; it cannot be checked"
        )


def _check_assignment(text: str) -> None:
    _refuse_arithmetic_name(text.split("=", 1)[0], "the assignment")
    target, _, value = text.partition("=")
    _refuse_integer_special(target.rstrip("+"), value)
    name = text.split("=", 1)[0].split("[", 1)[0].lstrip("+")
    if DANGEROUS_VARIABLES.match(name):
        raise ShellParseError(
            f"setting {name} changes what commands run; it is not allowed", forbidden=True
        )


# Where bash evaluates a word as arithmetic, a variable named there (or whose value is
# expanded there) is evaluated recursively: one holding 'a[$(cmd)]' runs cmd. A value a
# {{…}} reference stands for (XSKY_V1) is data from a result or a page; in such a place it
# would be code. Only numbers and operators are taken there, as for (( … )).
_ARITHMETIC_ERROR = (
    "{what} {text!r} is evaluated as arithmetic by bash, where a variable holding "
    "'a[$(cmd)]' runs cmd; only numbers and operators can be checked there"
)
_SUBSCRIPTED = re.compile(r"^[#!]?([A-Za-z_]\w*|\d+|[@*#?$!-])(?:\[(.*?)\])?(.*)$", re.S)
_LET_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*\s*(?:[-+*/%&|^]|<<|>>)?=(.*)$", re.S)


def _plain_arithmetic(text: str) -> bool:
    return bool(_PLAIN_ARITHMETIC.match(text))


def _refuse_arithmetic_parameter(value: str) -> None:
    """``${a[SUB]}`` and ``${x:OFFSET:LENGTH}`` evaluate SUB, OFFSET and LENGTH as arithmetic."""
    m = _SUBSCRIPTED.match(value)
    if m is None:
        return
    sub, rest = m.group(2), m.group(3)
    if sub is not None and sub not in ("@", "*") and not _plain_arithmetic(sub):
        raise ShellParseError(_ARITHMETIC_ERROR.format(what="the subscript", text=sub[:60]))
    if rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+"):
        if not _plain_arithmetic(rest[1:]):
            raise ShellParseError(_ARITHMETIC_ERROR.format(what="the offset", text=rest[1:][:60]))


def _refuse_arithmetic_name(name: str, what: str) -> None:
    """A variable's name written as ``a[SUB]`` (SUB is arithmetic) or only known at run time
    (``unset "$X"``, ``declare "$X"=1`` with X='a[$(cmd)]' runs cmd)."""
    if _SUBSTITUTION.search(name) or "$" in name:
        raise ShellParseError(
            f"{what} names a variable only known at run time ({name[:60]!r}), which bash may "
            "evaluate as arithmetic (a value 'a[$(cmd)]' runs cmd); it cannot be checked"
        )
    if "[" in name:
        sub = name.split("[", 1)[1].rsplit("]", 1)[0]
        if sub not in ("@", "*") and not _plain_arithmetic(sub):
            raise ShellParseError(_ARITHMETIC_ERROR.format(what="the subscript", text=sub[:60]))


# Variables bash itself gives the integer attribute: a value assigned to one is evaluated as
# arithmetic (RANDOM="${XSKY_V1}" with 'a[$(cmd)]' runs cmd), checked with real bash.
_INTEGER_SPECIALS = frozenset({"RANDOM", "SRANDOM", "OPTIND", "HISTCMD"})


def _refuse_integer_special(name: str, value: str | None) -> None:
    """``name`` given ``value`` (None: a value known only at run time — read, printf -v, for):
    refused where ``name`` is one of bash's integer variables and the value is not plain."""
    if name.split("[", 1)[0] in _INTEGER_SPECIALS and (
        value is None or not _plain_arithmetic(value)
    ):
        raise ShellParseError(
            _ARITHMETIC_ERROR.format(
                what=f"bash's integer variable {name} given",
                text=(value or "a value read at run time")[:60],
            )
        )


# Builtins whose arguments name variables (unset, read …) or are arithmetic (let).
_NAMING_BUILTINS = {"unset", "read", "mapfile", "readarray"}
# A word the shell expands when the command runs ($X, ${X}, $(…), `…`; not '$%d')
_EXPANDS = re.compile(r"\$[{(A-Za-z_0-9@*#?!$-]|`")


def _refuse_dangerous_name(name: str, how: str) -> None:
    """``read PATH``, ``printf -v LD_PRELOAD …``, ``for PATH in …``: the variables a plain
    ``PATH=…`` may not set, given another way (a third review: each was allowed)."""
    base = name.split("[", 1)[0]
    if DANGEROUS_VARIABLES.match(base):
        raise ShellParseError(
            f"setting {base} ({how}) changes what commands run; it is not allowed", forbidden=True
        )


def _refuse_arithmetic_builtin(argv: list[str]) -> None:
    name, args = argv[0], argv[1:]
    if name in ("read", "mapfile", "readarray", "getopts"):
        for arg in args[1:] if name == "getopts" else args:
            if arg[:1] != "-":
                _refuse_dangerous_name(arg, name)
    if name == "printf":
        for flag, arg in zip(args, args[1:], strict=False):
            if flag == "-v":
                _refuse_dangerous_name(arg, "printf -v")
    if name == "let":
        for arg in args:
            m = _LET_ASSIGNMENT.match(arg)
            if not _plain_arithmetic(m.group(1) if m else arg):
                raise ShellParseError(
                    _ARITHMETIC_ERROR.format(what="let's expression", text=arg[:60])
                )
    elif name in _DECLARERS:
        options = "".join(a[1:] for a in args if a[:1] == "-")
        if "i" in options or "n" in options:
            # An integer variable or a name reference: every later assignment to it — plain
            # `n="${XSKY_V1}"`, read, printf -v, for — evaluates the value (as arithmetic, or
            # as a variable's name with its subscript), which no check of that assignment sees.
            raise ShellParseError(
                f"{name} -{'i' if 'i' in options else 'n'} makes a variable whose later values "
                "bash evaluates as arithmetic or as a name (a value 'a[$(cmd)]' runs cmd); it "
                "cannot be checked"
            )
        for arg in args:
            if arg[:1] in ("-", "+"):
                continue
            target, eq, value = arg.partition("=")
            _refuse_arithmetic_name(target, f"{name}")
            if eq:
                _refuse_integer_special(target, value)
    elif name in ("compgen", "complete"):
        for flag, arg in zip(args, args[1:], strict=False):
            # -W's word list is expanded again (a value '$(cmd)' runs cmd); -C runs a command
            if flag == "-W" and ("$" in arg or "`" in arg):
                raise ShellParseError(
                    f"{name} -W expands its word list {arg[:60]!r} again, where a value "
                    "'$(cmd)' runs cmd; it cannot be checked"
                )
    elif name in _NAMING_BUILTINS:
        for arg in args:
            if arg[:1] != "-":
                _refuse_arithmetic_name(arg, name)
                if name != "unset":
                    _refuse_integer_special(arg, None)
    elif name == "printf" and len(args) > 1 and _EXPANDS.search(args[0]):
        # printf "${XSKY_V1}" x: a value '-va[$(cmd)]' is the option -v with that name
        raise ShellParseError(
            f"printf's first word {args[0][:60]!r} is only known at run time and may be its -v "
            "option naming a variable bash evaluates (a value '-va[$(cmd)]' runs cmd); write "
            "printf '%s' … — it cannot be checked"
        )
    if name in ("printf", "test", "[", "wait"):
        for flag, arg in zip(args, args[1:], strict=False):
            if flag in ("-v", "-R", "-p"):
                _refuse_arithmetic_name(arg, f"{name} {flag}")
                _refuse_integer_special(arg, None)


def _walk(node: Any, source: str, out: list[ShellCommand], depth: int) -> None:
    kind = node.kind
    if kind == "command":
        _command(node, source, out, depth)
    elif kind in ("commandsubstitution", "processsubstitution"):
        _walk(node.command, source, out, depth)
    elif kind in ("operator", "pipe", "reservedword", "tilde"):
        return
    elif kind == "parameter":
        _refuse_expansion(node.value, "the expansion")
        _refuse_arithmetic_parameter(node.value)
    elif kind == "heredoc":
        _refuse_expansion(node.value, "the here-document")
    elif kind in ("word", "assignment"):
        for part in getattr(node, "parts", []):
            _walk(part, source, out, depth)
    elif kind == "redirect":
        # A redirect outside a simple command (on a group, a loop, a subshell): record it.
        out.append(ShellCommand([":"], [_redirect(node, source, out, depth)]))
    elif kind == "function":
        for part in node.parts:
            if part.kind == "compound":
                _walk(part, source, out, depth)
    elif kind == "compound":
        for part in node.list:
            _walk(part, source, out, depth)
        for redirect in getattr(node, "redirects", []) or []:
            _walk(redirect, source, out, depth)
    else:  # list, pipeline, for, while, until, if, case …
        parts = getattr(node, "parts", None) or []
        if kind == "for" and len(parts) > 1 and parts[1].kind == "word":
            # `for RANDOM in …`: each item is given to the loop's variable at run time
            _refuse_arithmetic_name(parts[1].word, "for")
            _refuse_dangerous_name(parts[1].word, "for")
            _refuse_integer_special(parts[1].word, None)
        for attr in ("parts", "list"):
            for part in getattr(node, attr, []) or []:
                _walk(part, source, out, depth)


def _redirect(node: Any, source: str, out: list[ShellCommand], depth: int) -> Redirect:
    if getattr(node, "heredoc", None) is not None:
        _refuse_expansion(node.heredoc.value, "the here-document")
    target = node.output
    for part in getattr(target, "parts", []) or []:
        _walk(part, source, out, depth)  # substitutions in a target run too
    text = target.word if hasattr(target, "word") else str(target)
    return Redirect(node.type, text)


def _command(node: Any, source: str, out: list[ShellCommand], depth: int) -> None:
    argv: list[str] = []
    redirects: list[Redirect] = []
    assignments: list[str] = []
    expansions: dict[int, str] = {}
    quoted: set[int] = set()
    for part in node.parts:
        if part.kind == "assignment":
            _check_assignment(part.word)
            assignments.append(part.word)
            _walk(part, source, out, depth)  # FOO=$(rm x): the substitution runs
            continue
        if part.kind == "redirect":
            redirects.append(_redirect(part, source, out, depth))
            continue
        if part.kind == "word":
            word, expands, quoted_only = (
                (part.word, None, False)
                if not _reads_as_of((0, 12, 1))
                else _as_bash_reads(part, source)
            )
            if not argv:
                if expands or any(
                    p.kind in ("parameter", "commandsubstitution", "processsubstitution")
                    for p in getattr(part, "parts", [])
                ):
                    raise ShellParseError(
                        f"the command name {word!r} is only known at run time; it cannot be checked"
                    )
                if any(c in word for c in "{}*?["):
                    raise ShellParseError(
                        f"the command name {word!r} would be expanded by the shell; write it plainly"
                    )
            elif argv[0] in _DECLARERS and "=" in word:
                _check_assignment(word)
            how = "runtime" if expands else _expansion(part, source, expands is None)
            if argv and how is not None:
                expansions[len(argv)] = how
                if how == "runtime" and expands and quoted_only:
                    quoted.add(len(argv))
            argv.append(word)
            _walk(part, source, out, depth)  # substitutions inside arguments run too
    if not argv:
        out.append(ShellCommand([":"], redirects))  # assignments only, or redirects only
        return
    _refuse_arithmetic_builtin(argv)
    out.append(ShellCommand(argv, redirects, assignments, expansions, quoted))
    before = len(out)
    _unwrap(argv, out, depth, None if not _reads_as_of((0, 12, 1)) else expansions)
    strings = [r.target for r in redirects if r.op == "<<<"]
    if strings and _reads_as_of((0, 12, 5)):
        readers = [p.argv[0] for p in out[before:] if p.argv[0].endswith(_READS_INPUT)]
        if readers:
            _here_string_code(readers[-1][: -len(_READS_INPUT)], strings[-1], out, depth)


_GLOB_CHARS = set("*?[{")
_EXPANSION_START = re.compile(r"[{(A-Za-z_0-9@*#?!$-]")


_CODE_FLAG = {"python": "-c", "node": "-e", "perl": "-e", "ruby": "-e", "php": "-r", "lua": "-e"}


def _here_string_code(reader: str, text: str, out: list[ShellCommand], depth: int) -> None:
    """The here-string a program that reads its commands from its input is given, read as the
    code it is (sec14: `bash <<< 'touch ran'` and `python3 <<< "import os; os.system(…)"` ran
    touch past deny shell(touch:*), allowed — the here-string was read as a file's data): a
    shell's, as the command line it is; an interpreter's, as code given in its arguments
    (`python3 -c …`, asked for); another reader's (make -f -, jshell, tclsh) cannot be read."""
    if _HOLDS_VALUES.get() and ("$" in text or "`" in text):
        return  # (a value read as commands: split_command asks for it, saying so)
    name = _named(reader)
    if _is_shell(name):
        _parse_into(text, out, depth + 1)
    elif program_base(name) in _CODE_FLAG:
        out.append(ShellCommand([reader, _CODE_FLAG[program_base(name)], text]))
    else:
        raise ShellParseError(
            f"{reader} reads its program from a here-string, which the checker does not read; "
            "it cannot be checked"
        )


def _as_bash_reads(word: Any, source: str) -> tuple[str, bool | None, bool]:
    """``word`` as bash reads it — its quotes removed, its expansions left as written —,
    whether it expands at run time ($X, ${X}, $(…), `…` outside '…'; None: as the parser
    says, for ANSI-C and locale quoting, which this reading does not follow), and whether
    every expansion is inside "…" with no * ? [ { outside quotes: then bash neither splits nor
    globs what it expands to (`"${XSKY_V1}"` is one word, its value's text — a URL's '?', a
    file name's ' - ' are no glob and no second word).

    bashlex 0.18 misreads a word that opens with '…' and goes on with "…$X…": it keeps the
    inner quotes as text and drops the expansion (`'s/a/'"$X"'/'` reads `s/a/'"$X"'/`, no
    parameter; `'a'"$(cmd)"'b'` hides cmd). That is the very form a {{…}} reference inside
    '…' is rendered to (xsky.plan.variables.render_command): a fourth review found every value
    check skipped for `sed 's/a/{{…}}/'` and a command substitution run past every rule. A
    substitution the parser did not see cannot be checked; an expansion it did not see is
    one known only at run time."""
    start, end = getattr(word, "pos", (0, 0))
    written = source[start:end]
    if not written or (("$'" in written or '$"' in written) and not _reads_as_of((0, 12, 2))):
        return word.word, None, False  # (0.12.1 read ANSI-C and locale quoting as bashlex does)
    out: list[str] = []
    expands = substitutes = bare = False
    quote = ""
    i = 0
    while i < len(written):
        c = written[i]
        if not quote and c == "$" and written[i + 1 : i + 2] == "'":
            # ANSI-C quoting, $'…' (sec11: a word holding one was read as bashlex reads it, which
            # misses the "${XSKY_V1}" of `sed 's/{{…}}/'$'\t''/g'`: no value check at all)
            text, i = _ansi_c(written, i + 2)
            out.append(text)
            continue
        if not quote and c == "$" and written[i + 1 : i + 2] == '"':
            quote = '"'  # locale quoting, $"…": read as "…"
            i += 2
            continue
        if quote == "'":
            if c == "'":
                quote = ""
            else:
                out.append(c)
        elif c == "\\" and i + 1 < len(written):
            nxt = written[i + 1]
            if quote == '"' and nxt not in '$`"\\\n':
                out.append(c)
            if nxt != "\n":
                out.append(nxt)
            i += 1
        elif c == "'" and not quote:
            quote = "'"
        elif c == '"':
            quote = "" if quote == '"' else '"'
        else:
            if c == "`" or (c == "$" and written[i + 1 : i + 2] == "("):
                substitutes = True
            if c == "`" or (c == "$" and _EXPANSION_START.match(written[i + 1 : i + 2] or " ")):
                expands = True
            bare = bare or (not quote and c in "$`*?[{")
            out.append(c)
        i += 1
    seen = {p.kind for p in getattr(word, "parts", [])}
    if substitutes and "commandsubstitution" not in seen:
        raise ShellParseError(
            f"the word {written[:60]!r} holds a command substitution the parser does not see; "
            "write it without mixing quotes — it cannot be checked"
        )
    hidden = expands and not seen & {"parameter", "commandsubstitution"}
    read = "".join(out)
    decoded = "$'" in written or '$"' in written  # (bashlex keeps the $ and the escapes)
    shown = read if read != word.word and (hidden or decoded or "'" in word.word) else word.word
    return shown, expands, not bare


_ANSI_C = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_ANSI_C_NUMBER = re.compile(r"[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}")


def _ansi_c(written: str, i: int) -> tuple[str, int]:
    """The text of the $'…' whose body starts at ``written[i]``, as bash decodes it, and where
    the word goes on after its closing quote. Raises ShellParseError when it is not closed."""
    out: list[str] = []
    while i < len(written):
        c = written[i]
        if c == "'":
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(written):
            nxt = written[i + 1]
            if nxt in _ANSI_C:
                out.append(_ANSI_C[nxt])
                i += 2
                continue
            if nxt == "c" and i + 2 < len(written):
                out.append(chr(ord(written[i + 2]) & 0x1F))
                i += 3
                continue
            if m := _ANSI_C_NUMBER.match(written, i + 1):
                digits = m.group()
                base, number = (8, digits) if digits[0].isdigit() else (16, digits[1:])
                code = int(number, base)
                out.append(chr(code) if code < 0x110000 else "")
                i = m.end()
                continue
        out.append(c)
        i += 1
    raise ShellParseError("a $'…' string is not closed; it cannot be checked")


def _expansion(word: Any, source: str, parts: bool = True) -> str | None:
    """How the shell expands a word (see :class:`ShellCommand`), None when it does not
    (``parts`` False: the parser's expansions are not asked, the word was read here)."""
    if parts and any(
        p.kind in ("parameter", "commandsubstitution") for p in getattr(word, "parts", [])
    ):
        return "runtime"
    start, end = getattr(word, "pos", (0, 0))
    written = source[start:end] or word.word
    quote = ""
    first = ""  # the first character the word surely begins with
    i = 0
    while i < len(written):
        c = written[i]
        if quote:
            if c == quote:
                quote = ""
            elif quote == '"' and c == "\\":
                i += 1
                first = first or written[i : i + 1]
            else:
                first = first or c
        elif c == "$" and written[i + 1 : i + 2] in ("'", '"'):
            quote = written[i + 1]
            i += 1
        elif c in ("'", '"'):
            quote = c
        elif c == "\\":
            i += 1
            first = first or written[i : i + 1]
        elif c in _GLOB_CHARS:
            return "glob" if first and first != "-" else "glob-start"
        else:
            first = first or c
        i += 1
    return None


# How each wrapper reads its options, as getopt does (sec11: an option the WRAPPERS table did not
# list, a unique prefix of one it did, or a valued letter at the end of a cluster of short ones —
# `xargs -rn 1 touch x`, `timeout --sig KILL 5 touch x`, `stdbuf --output L touch x`, `ionice
# --class 3 touch x`, `flock -nw 1 lock touch x` — took the option's value for the program run,
# and the program itself was never checked: each ran touch past deny shell(touch:*)). For each:
# the short options that take a value (attached, or the next word), those whose value can only
# be attached, the long options that take a value and those that take none (or take one only
# after '='). A long option not listed, written without '=', cannot be read: it is asked for.
_WRAPPER_GETOPT: dict[str, tuple[str, str, frozenset[str], frozenset[str]]] = {
    "env": ("uCSa", "", frozenset({"--unset", "--chdir", "--split-string", "--argv0"}), frozenset(
        {"--ignore-environment", "--null", "--block-signal", "--default-signal",
         "--ignore-signal", "--list-signal-handling", "--debug", "--help", "--version"})),
    "xargs": ("adEILnPs", "eil", frozenset(
        {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--process-slot-var",
         "--max-chars"}), frozenset(
        {"--null", "--eof", "--replace", "--max-lines", "--open-tty", "--interactive",
         "--no-run-if-empty", "--show-limits", "--verbose", "--exit", "--help", "--version"})),
    "timeout": ("sk", "", frozenset({"--kill-after", "--signal"}), frozenset(
        {"--preserve-status", "--foreground", "--verbose", "--help", "--version"})),
    "nice": ("n", "", frozenset({"--adjustment"}), frozenset({"--help", "--version"})),
    "stdbuf": ("ioe", "", frozenset({"--input", "--output", "--error"}),
               frozenset({"--help", "--version"})),
    "flock": ("wEc", "", frozenset({"--timeout", "--wait", "--conflict-exit-code", "--command"}),
              frozenset({"--shared", "--exclusive", "--unlock", "--nonblock", "--close",
                         "--no-fork", "--verbose", "--help", "--version"})),
    "ionice": ("cnpPu", "", frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"}),
               frozenset({"--ignore", "--help", "--version"})),
    "setsid": ("", "", frozenset(), frozenset({"--ctty", "--fork", "--wait", "--help",
                                               "--version"})),
    "nohup": ("", "", frozenset(), frozenset({"--help", "--version"})),
    "chroot": ("", "", frozenset({"--groups", "--userspec"}), frozenset(
        {"--skip-chdir", "--help", "--version"})),
    "taskset": ("", "", frozenset(), frozenset({"--all-tasks", "--pid", "--cpu-list", "--help",
                                                "--version"})),
    "chrt": ("TPD", "", frozenset({"--sched-runtime", "--sched-period", "--sched-deadline"}),
             frozenset({"--batch", "--deadline", "--fifo", "--idle", "--other", "--rr",
                        "--reset-on-fork", "--all-tasks", "--max", "--pid", "--verbose",
                        "--help", "--version"})),
    "watch": ("nq", "d", frozenset({"--interval", "--equexit"}), frozenset(
        {"--beep", "--color", "--no-color", "--differences", "--errexit", "--chgexit",
         "--precise", "--no-title", "--no-wrap", "--no-linewrap", "--exec", "--help",
         "--version"})),
    "prlimit": ("po", "cdefilmnqrstuvxy", frozenset({"--pid", "--output"}), frozenset(
        {"--noheadings", "--raw", "--verbose", "--help", "--version", "--core", "--data",
         "--nice", "--fsize", "--sigpending", "--memlock", "--rss", "--nofile", "--msgqueue",
         "--rtprio", "--stack", "--cpu", "--nproc", "--as", "--locks", "--rttime"})),
    "runuser": ("ugGswc", "", frozenset(
        {"--user", "--group", "--supp-group", "--shell", "--whitelist-environment", "--command",
         "--session-command"}), frozenset(
        {"--preserve-environment", "--login", "--fast", "--pty", "--help", "--version"})),
    "time": ("fo", "", frozenset({"--format", "--output"}), frozenset(
        {"--append", "--portability", "--verbose", "--quiet", "--help", "--version"})),
}  # fmt: skip


def _wrapper_option_takes_next(name: str, head: str, takes_value: frozenset[str]) -> bool:
    """Does option word ``head`` of wrapper ``name`` take the next word as its value? Read as
    getopt reads it (_WRAPPER_GETOPT; a wrapper not there: its WRAPPERS options): a cluster of
    short options ends at the first that takes a value (its value the rest, or the next word);
    a long option may be any unique prefix of one. Raises ShellParseError for a long option the
    table does not know (or that is ambiguous), written without '='."""
    short, optional, long_valued, long_flags = _WRAPPER_GETOPT.get(
        name,
        (
            "".join(o[1] for o in takes_value if len(o) == 2 and o[0] == "-"),
            "",
            frozenset(o for o in takes_value if o.startswith("--")),
            frozenset(),
        ),
    )
    if head.startswith("--"):
        flag, eq, _ = head.partition("=")
        if eq:
            return False
        if flag in long_valued or flag in long_flags:
            return flag in long_valued
        matches = {f for f in long_valued | long_flags if f.startswith(flag)}
        if len(matches) == 1:
            return matches <= long_valued
        raise ShellParseError(
            f"{name}'s option {head[:40]!r} is not one the checker knows how to read (whether "
            "the next word is its value or the command it runs); it cannot be checked"
        )
    for i, letter in enumerate(head[1:], 1):
        if letter in optional:
            return False
        if letter in short:
            return i == len(head) - 1
    return False


# The word xargs's input stands for, where the command checked is given no replace string.
# Its text is not read from the call's values: what xargs reads may be a value another program
# changed first (`echo "{{…}}" | jq -r '.[]' | xargs …` decodes "\u002dx" to -x).
XARGS_INPUT = "${XARGS_INPUT}"
_XARGS_VALUED = set("adELnPs")


def _xargs_input(
    options: list[str], rest: list[str], expansions: dict[int, str]
) -> tuple[list[str], dict[int, str]]:
    """The command xargs runs as the checker reads it in a command that holds a {{…}} value,
    whose text may be xargs's input (`echo "{{…}}" | xargs sed -i 's/a/b/'`): the words xargs
    reads from it are the command's arguments — where it reads options (a value
    `f.txt '--expression=1e cmd'` is two words, the second sed's option) or, with -I/-i/
    --replace, inside a command line it gives a shell (`xargs -I{} sh -c 'echo {}'`). They are
    known only when it runs: the words holding the replace string, or one more word at the end
    (XARGS_INPUT), are marked so, and the value checks read them as they read "$X" (sec11:
    each ran touch past deny shell(touch:*) unasked)."""
    replace = None
    words = iter(options)
    for word in words:
        if word == "--replace" or word.startswith("--replace="):
            replace = word.partition("=")[2] or "{}"
        elif word.startswith("-") and not word.startswith("--"):
            for i, letter in enumerate(word[1:], 1):
                if letter in "Ii":
                    attached = word[i + 1 :]
                    replace = attached or (next(words, "") if letter == "I" else "{}")
                    break
                if letter in _XARGS_VALUED:
                    break
    if replace:
        if replace in rest[0]:
            raise ShellParseError(
                f"the command xargs runs, {rest[0][:60]!r}, is made of its input; it cannot be "
                "checked"
            )
        marked = {i: "runtime" for i, word in enumerate(rest) if replace in word}
        return rest, {**expansions, **marked}
    return [*rest, XARGS_INPUT], {**expansions, len(rest): "runtime"}


# Package and environment tools that run a program their words name, by the subcommand that
# runs it (none: the tool's first word past its options is the program): `npx prog`, `poetry
# run prog`, `mise exec -- prog`, `nix shell pkgs -c prog`.
_RUNNERS: dict[str, frozenset[str]] = {
    **{n: frozenset() for n in ("npx", "pnpx", "bunx", "uvx")},
    **{n: frozenset({"run"}) for n in "pipx poetry pdm hatch rye pipenv uv conda mamba "
       "micromamba pixi devbox".split()},
    "npm": frozenset({"exec", "exe", "x"}), "pnpm": frozenset({"exec", "dlx"}),
    "yarn": frozenset({"exec", "dlx"}), "bun": frozenset({"x"}),
    "asdf": frozenset({"exec"}), "direnv": frozenset({"exec"}), "mise": frozenset({"exec", "x"}),
    "bundle": frozenset({"exec"}), "nix": frozenset({"shell", "develop"}),
    # (sec13b: `pyenv exec touch x`, `dotenv run touch x` ran touch past deny shell(touch:*))
    **{n: frozenset({"exec"}) for n in "pyenv rbenv nodenv goenv jenv plenv fnm".split()},
    **{n: frozenset({"run"}) for n in "dotenv dotenvx volta".split()},
}  # fmt: skip
# Where the program comes after a word of its own: mise exec [TOOLS] -- PROG, nix shell -c PROG
_RUNNER_MARKS = {"mise": ("--",), "nix": ("-c", "--command")}
# The runners' options known to take no value (any other may take the next word)
_RUNNER_FLAGS = frozenset(
    "-y --yes --no -q --quiet -v --verbose --frozen --locked --no-sync --isolated --active "
    "--no-project --offline --no-capture-output --live-stream".split()
)


def runner_program(argv: list[str]) -> int | None:
    """Where in ``argv`` the program a package or environment tool (_RUNNERS) runs is named —
    ``len(argv)`` when it is not found past the tool's options (each word may be the program) —
    or None: no such tool, or not its subcommand that runs one. A word after an option not
    known to take no value may be that option's value (read on past it)."""
    reading = _runner_reading(argv)
    return None if reading is None else reading[0]


def _runner_reading(argv: list[str]) -> tuple[int, list[int]] | None:
    """runner_program's reading of ``argv``: where the program is named, and the words before
    it read past as the value of the option before them — each of which may be the program
    instead (npm reads an option it does not know as a flag, and `npx --no-install touch x`,
    `npx --foo touch x` ran touch: sec13b) — or None."""
    name = argv[0].rsplit("/", 1)[-1]
    if program_base(name) == "python":
        # `python3 -m dotenv run touch x` is `dotenv run touch x` (review17: it ran touch in bash
        # past deny shell(touch:*), allowed; pipx, poetry, uv, pdm, hatch, pipenv and conda run
        # as modules alike): the module's reading, at the word that names it
        own, module = _interpreter_own_words(name, argv[1:])
        if module is None or module not in _RUNNERS:
            return None
        at = len(own)  # (the word naming the module: `-m dotenv`'s second, `-mdotenv` itself)
        reading = _runner_reading([module, *argv[at + 1 :]])
        if reading is None:
            return None
        return reading[0] + at, [i + at for i in reading[1]]
    subcommands = _RUNNERS.get(name)
    if subcommands is None:
        return None
    start = 1
    if subcommands:
        sub = next((i for i, a in enumerate(argv[1:], 1) if a in subcommands), None)
        if sub is None and name == "pnpm" and _reads_as_of((0, 12, 5)):
            # `pnpm touch x`: a word that is no pnpm command runs as `pnpm exec` (or a script
            # of that name) — sec14: it ran touch past deny shell(touch:*), allowed
            reading = _runner_words(name, argv, 1)
            if reading[0] < len(argv):
                return reading if argv[reading[0]] not in _PNPM_COMMANDS else None
            # (`pnpm "{{…}}"`: a word known only when it runs may name the program)
            return reading if any("$" in a or "`" in a for a in argv[1:]) else None
        if sub is None and name == "yarn" and _reads_as_of((0, 12, 5)):
            # `yarn node ARGS` is node ARGS, in the project's environment (Yarn 2+; sec14:
            # `yarn node -e CODE` ran CODE unasked, where `node -e CODE` is asked for)
            words = [i for i, a in enumerate(argv[1:], 1) if not a.startswith("-")]
            return (words[0], []) if words and argv[words[0]] == "node" else None
        if sub is None:
            return None
        start = sub + 1
    return _runner_words(name, argv, start)


# pnpm's own commands, and those it hands to npm: any other first word runs as `pnpm exec`
_PNPM_COMMANDS = frozenset(
    "add audit bin c cache cat-file cat-index completion config create dedupe deploy dlx doctor "
    "env exec fetch find-hash help i ignored-builds import init install install-test it "
    "licenses link list ll la ln ls m multi outdated pack patch patch-commit patch-remove "
    "prune publish rb rebuild recursive remove rm root run run-script self-update server setup "
    "start store t test tst un uni uninstall unlink up update upgrade why approve-builds "
    "access adduser bugs deprecate dist-tag docs edit home info login logout owner ping prefix "
    "profile pkg repo s se search set-script show star stars team token unpublish unstar v "
    "version view whoami xmas restart stop query sbom".split()
)


def _runner_words(name: str, argv: list[str], start: int) -> tuple[int, list[int]]:
    """_runner_reading's walk of a runner's words from ``start`` (past its subcommand)."""
    marks = _RUNNER_MARKS.get(name)
    skipped: list[int] = []
    for i in range(start, len(argv)):
        word = argv[i]
        if marks is not None:
            if word in marks:
                return (i + 1 if i + 1 < len(argv) else len(argv)), []
            continue
        if word == "--":
            return (i + 1 if i + 1 < len(argv) else len(argv)), skipped  # (npm exec -- PROG)
        if word.startswith("-") or "$" in word or "`" in word:
            continue
        before = argv[i - 1] if i > start else ""
        if before.startswith("-") and "=" not in before and before not in _RUNNER_FLAGS:
            skipped.append(i)
            continue  # (maybe the value of the option before it)
        if name == "direnv" and i == start:
            continue  # direnv exec DIR PROG
        return i, skipped
    return len(argv), skipped


# Runners that give a shell a command line made of their words (pnpm -c/--shell-mode exec
# joins them; pixi run and devbox run run theirs in a shell, by their docs)
_LINE_RUNNERS = {"pixi": "run", "devbox": "run"}
# Runners whose subcommand, given no command, starts a shell (which reads its input)
_SHELL_SUBCOMMANDS = {
    "nix": frozenset({"shell", "develop"}), "devbox": frozenset({"shell"}),
    "pixi": frozenset({"shell"}), "pipenv": frozenset({"shell"}),
    "poetry": frozenset({"shell"}), "hatch": frozenset({"shell"}),
}  # fmt: skip


def _uv_runs_its_input(argv: list[str]) -> bool:
    """Is ``argv`` `uv run` given `-` for its script (uv reads the script from its input —
    sec14: `printf %s "{{…}}" | uv run -` ran the value as Python past deny shell(touch:*)), also
    as `python3 -m uv run -`?"""
    name = argv[0].rsplit("/", 1)[-1]
    words = argv[1:]
    if program_base(name) == "python":
        own, module = _interpreter_own_words(name, words)
        if module != "uv":
            return False
        words = words[len(own) :]
    elif name != "uv":
        return False
    if "run" not in words:
        return False
    reading = _runner_reading(["uv", *words])
    at = reading[0] if reading is not None else len(words) + 1
    return "-" in words[words.index("run") + 1 : at - 1]


def _starts_a_shell(name: str, args: list[str]) -> bool:
    """Does a runner given ``args`` start a shell of its environment with no command given it
    (`nix shell pkgs`, `nix develop`, `nix-shell -p pkg`, `devbox shell`, `pipenv shell` …)?
    Not reading a terminal, that shell reads its commands from its input."""
    if name == "npm" and "explore" in args:
        rest = args[args.index("explore") + 1 :]
        return "--" not in rest and len([a for a in rest if not a.startswith("-")]) < 2
    if name == "nix-shell":
        return (
            not any(a.split("=", 1)[0] in ("--run", "--command") for a in args) and "--" not in args
        )
    subs = _SHELL_SUBCOMMANDS.get(name)
    words = [a for a in args if not a.startswith("-")]
    if subs is None or not words or words[0] not in subs or "--" in args:
        return False
    return name != "nix" or not any(a.split("=", 1)[0] in ("-c", "--command") for a in args)


def _runner_lines(argv: list[str]) -> list[tuple[str, list[str]]]:
    """The command lines a package or environment runner gives a shell, each with the words of
    ``argv`` it is made of (sec14: `mise exec -c 'touch x'`, `pnpm -c exec 'echo; touch x'`,
    `pnpm -c exec echo "{{…}}"`, `yarn exec 'echo; touch x'` ran touch past deny
    shell(touch:*), allowed): mise exec's -c/--command value; pnpm's program and its words
    under -c/--shell-mode (joined); Yarn 2+'s exec's first word (the words after it are the
    line's arguments, "$@"); pixi run's and devbox run's program and words (each word that may
    be the program begins one)."""
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if name == "mise":
        sub = next((i for i, a in enumerate(args) if a in ("exec", "x")), None)
        lines: list[tuple[str, list[str]]] = []
        for i in range(len(args) if sub is None else sub + 1, len(args)):
            word = args[i]
            if word == "--":
                break
            flag, eq, value = word.partition("=")
            after = args[i + 1 : i + 2]
            if flag.startswith("--") and len(flag) > 3 and "--command".startswith(flag):
                lines += [(value, [word])] if eq else [(a, [a]) for a in after]
            elif word[:1] == "-" and word[1:2] != "-" and "c" in word[1:]:
                rest = word[word.index("c", 1) + 1 :]
                lines += [(rest, [word])] if rest else [(a, [a]) for a in after]
        return lines
    if name == "npm" and "explore" in args:
        # npm explore PKG [-- CMD …]: its words joined, run by a shell in the package's folder
        # (sec14: `npm explore x -- 'cd ../.. && touch ran'` ran touch past deny shell(touch:*))
        tail = args[args.index("explore") + 1 :]
        words = [a for a in tail if not a.startswith("-")]
        line = tail[tail.index("--") + 1 :] if "--" in tail else words[1:]
        return [(" ".join(line), line)] if line else []
    if name == "yarn":
        sub = next((i for i, a in enumerate(args) if a == "exec"), None)
        return [(args[sub + 1], [args[sub + 1]])] if sub is not None and sub + 1 < len(args) else []
    shell_mode = name == "pnpm" and any(
        a in ("-c", "--shell-mode") or a.startswith("--shell-mode=")
        for a in args[: args.index("exec") if "exec" in args else None]
    )
    if not shell_mode and _LINE_RUNNERS.get(name) not in args:
        return []
    reading = _runner_reading(argv)
    if reading is None:
        return []
    at, maybe = reading
    return [(" ".join(argv[i:]), argv[i:]) for i in [*maybe, at] if i < len(argv)]


def _runs_a_shell(name: str, args: list[str]) -> bool:
    """Does wrapper ``name``, given no command, run a shell (which reads its input)? chroot
    NEWROOT runs ``$SHELL -i``; ``sudo -s``/``-i`` and ``doas -s`` the user's shell."""
    if name == "chroot":
        return True
    if name == "sudo":
        return option_given(args, "--shell", 4, "s", "CDghpRTUu") or option_given(
            args, "--login", 4, "i", "CDghpRTUu"
        )
    if name == "doas":
        for word in args:
            if word == "--" or not word.startswith("-"):
                break
            for letter in word[1:]:
                if letter == "s":
                    return True
                if letter in "Cu":
                    break
    return False


def _refuse_runtime_program(word: str, wrapper: str) -> None:
    """The program a wrapper runs, named by a word only known at run time (``xargs "$V"``,
    ``timeout 5 "${XSKY_V1}" …``, ``env "${XSKY_V1}" cmd`` — also a variable's assignment there):
    what runs is a value, not a command any rule saw — as for ``"$V"`` written first."""
    if "$" in word or "`" in word:
        raise ShellParseError(
            f"the command {wrapper} runs, {word[:60]!r}, is only known at run time; it cannot "
            "be checked"
        )


def _shell_options(args: list[str]) -> tuple[str, int, bool]:
    """A shell's options as it reads them: (the letters of its short options given with '-',
    where its operands begin, whether a lone '-' ended them). Each o or O of a cluster takes the
    next word, as --rcfile and --init-file do (sec11: `bash -euo pipefail -c 'touch x'` was read
    as a script named pipefail, `bash --rcfile /dev/null -c …` as one named /dev/null, and
    their command lines never checked; 0.12.1's reading gave a word only to -o or -O alone)."""
    letters, i = "", 0
    while i < len(args):
        a = args[i]
        if a == "--" or a == "-":
            return letters, i + 1, a == "-"
        if a[:1] in ("-", "+") and len(a) > 1 and not a.startswith("--"):
            letters += a[1:] if a[0] == "-" else ""
            i += 1 + (
                sum(1 for c in a[1:] if c in "oO")
                if _reads_as_of((0, 12, 2))
                else int(a[1:] in ("o", "O"))
            )
            continue
        if a.startswith("--"):
            i += 2 if a in ("--rcfile", "--init-file") and _reads_as_of((0, 12, 2)) else 1
            continue
        break
    return letters, i, False


def _fish_options(args: list[str]) -> tuple[list[str], int]:
    """fish's command lines (-c/--command, and -C/--init-command, run first: each given, in a
    cluster, attached or after '=', by any unique prefix of the long name) and where its
    operands (a script, then its arguments) begin."""
    lines: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return lines, i + 1
        if a.startswith("--"):
            flag, eq, value = a.partition("=")
            code = [f for f in _FISH_CODE if len(flag) > 3 and f.startswith(flag)]
            valued = code or any(
                len(flag) > 3 and f.startswith(flag)
                for f in ("--profile", "--debug", "--debug-output", "--features")
            )
            if code:
                lines.append(value if eq else (args[i + 1] if i + 1 < len(args) else ""))
            i += 1 if eq or not valued else 2
            continue
        if a.startswith("-") and len(a) > 1:
            taken = 1
            for j, letter in enumerate(a[1:], 1):
                if letter in _FISH_VALUED:
                    value = a[j + 1 :]
                    if not value:
                        value = args[i + 1] if i + 1 < len(args) else ""
                        taken = 2
                    if letter in "cC":
                        lines.append(value)
                    break
            i += taken
            continue
        break
    return lines, i


def _shell_rcfile(args: list[str]) -> str | None:
    """The file an interactive shell (-i, also with -c) runs first: bash's --rcfile or
    --init-file FILE (sec14: `printf %s "{{…}}" | bash --rcfile /dev/stdin -ic true` ran the
    value as commands past deny shell(touch:*), allowed — -c's line was read, the file not)."""
    letters, end, _ = _shell_options(args)
    if "i" not in letters:
        return None
    for i, a in enumerate(args[:end]):
        if a in ("--rcfile", "--init-file") and i + 1 < len(args):
            return args[i + 1]
    return None


def _shell_command_string(name: str, args: list[str]) -> str | None:
    """The command line ``sh -c`` runs — also with -c among other short options (``bash -ec``,
    ``-xc``, ``-c -e``): the first word that is no option, past -o/-O's values. None without -c."""
    letters, i, _ = _shell_options(args)
    if "c" not in letters:
        return None
    rest = args[i:]
    if not rest:
        raise ShellParseError(f"{name} -c without a command")
    return rest[0]


# Files that are a process's input, or a command's output (`<(…)`): a script read from one is
# what a pipe, a here-string or that command gives, as much as `sh` alone reads its input.
_INPUT_FILES = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


def _input_script(word: str) -> bool:
    if word in _INPUT_FILES or word.startswith(("<(", "/dev/fd/", "/proc/self/fd/")):
        return True
    if not _reads_as_of((0, 12, 3)):
        return False
    # The same files spelled otherwise (sec12: `//dev/stdin`, `/dev/./stdin`, `../../dev/stdin`,
    # `/proc/thread-self/fd/0`, `/proc/self/root/dev/stdin` ran a value piped to `bash` or
    # `python3` past the check above): any path into /proc — no script is kept there — and a
    # path that, its `.`, doubled slashes and leading `..` read away, is dev/stdin or dev/fd/….
    parts = [p for p in word.split("/") if p not in ("", ".")]
    if word.startswith("/") and parts[:1] == ["proc"]:
        return True
    tail = posixpath.normpath("/".join(parts) or ".").split("/")
    while tail[:1] == [".."]:
        tail = tail[1:]
    # (a `..` after a link may lead elsewhere than it reads: a path through dev that ends as
    # the input's file does is taken for it — not a script in a folder named dev)
    return tail[:2] in (["dev", "stdin"], ["dev", "fd"]) or (
        ".." in parts and "dev" in parts and (parts[-1] == "stdin" or parts[-1].isdigit())
    )


def _shell_reads_input(args: list[str]) -> bool:
    """Does a shell called with ``args`` (no -c) read its commands from its input — no script
    named (past its options' values: _shell_options), ``-s`` among its options (the words
    after are its arguments, not a script), or a script that is its input or a command's output
    (``/dev/stdin``, ``<(…)``)? (sec11: `sh -s x`, `bash -O extglob`, `bash -o posix`, `bash
    --rcfile f`, `bash /dev/stdin`, `bash <(printf … "{{…}}")` ran a value piped or given to
    them as commands, past the check for `printf … | sh`.)"""
    letters, i, dash = _shell_options(args)
    if dash or "s" in letters:
        return True
    rest = args[i:]
    return not rest or _input_script(rest[0])


# python's short options whose value is the rest of their word or the next one: a letter after
# one of them in a cluster is its value, not an option
_PYTHON_VALUED = "cmWX"


def _python_short(word: str, letter: str) -> int:
    """Where ``letter`` stands in python's cluster of short options ``word``, counted after the
    dash (``-m``, ``-Bm``, ``-Emcode``: 0, 1, 1), before a letter whose value is the rest; -1 if
    it does not. Read for -m (sec13: `python3 -Em code` read "code" as a script, and the REPL ran
    a piped value), -i (review15: `printf %s "{{…}}" | python3 -qi tool.py` ran the value as
    Python after the script) and -c."""
    if word.startswith("--"):
        return -1
    for at, found in enumerate(word[1:]):
        if found == letter:
            return at
        if found in _PYTHON_VALUED:
            return -1
    return -1


# Interpreter options whose value is the next word (python -W/-X, node -r, ruby/perl -I …)
_INTERPRETER_VALUED = frozenset({"-W", "-X", "-r", "--require", "-I", "--import", "--loader"})
# (sec12: `python3 --check-hash-based-pycs never` was read as a script named "never", and the
# value piped to it ran as the program)
_INTERPRETER_VALUED_0123 = frozenset({"--check-hash-based-pycs"})
# python -m modules that read their code from the input (the REPLs)
_STDIN_MODULES = frozenset({"code", "asyncio"})
# …and, since 0.12.4 (sec13): pdb, whose commands (any Python statement) come from the input
# after any script it runs; cProfile, profile and trace, which run a script they are given
# (`python3 -m cProfile /dev/stdin`)
_STDIN_MODULES_0124 = frozenset({"pdb"})
_SCRIPT_MODULES = frozenset({"cProfile", "profile", "trace", "pdb"})
# node's options whose value may be the next word (node --help: `--title=...` and the like;
# sec13: `printf %s "{{…}}" | node --title x` ran the value as the program, "x" read as a
# script): a word after one of them is its value, not the script
_NODE_VALUED = frozenset(
    """-C --conditions --title --disable-warning --unhandled-rejections --inspect-port
    --redirect-warnings --max-http-header-size --dns-result-order --diagnostic-dir
    --icu-data-dir --env-file --env-file-if-exists --experimental-loader --loader --input-type
    --openssl-config --report-dir --report-directory --report-filename --report-signal
    --secure-heap --secure-heap-min --snapshot-blob --heapsnapshot-signal
    --heapsnapshot-near-heap-limit --cpu-prof-dir --cpu-prof-name --cpu-prof-interval
    --heap-prof-dir --heap-prof-name --heap-prof-interval --trace-event-categories
    --trace-event-file-pattern --tls-cipher-list --tls-keylog --use-largepages --v8-pool-size
    --watch-path --test-concurrency --test-name-pattern --test-reporter
    --test-reporter-destination --test-shard --test-timeout --test-skip-pattern
    --experimental-policy --policy-integrity --disable-proto --experimental-default-type
    --experimental-sea-config --build-snapshot-config --allow-fs-read --allow-fs-write
    --network-family-autoselection-attempt-timeout --inspect-publish-uid
    --trace-require-module --debug-port --es-module-specifier-resolution
    --experimental-specifier-resolution --localstorage-file --run""".split()
)
# perl -d (in a cluster: -wd, -dt) runs its script under the debugger, which reads its
# commands — any Perl — from the input (not -d:Module, which loads Devel::Module)
_PERL_DEBUGGER = re.compile(r"-[acnpsStTuUwWX]*d(?!:).*")


# Interpreters' options that print (a version, help, configuration) and exit before any
# program runs: given before the script, nothing is read from the input (sec14: `node -v`,
# `python3 --version`, `perl -v` in a command holding a value were asked as reading the value
# as their program — false asks, checked in bash). Not ruby's -v: it turns on warnings and reads
# the program from the input.
_PRINTS_AND_EXITS = {
    "python": frozenset({"--version", "--help", "--help-env", "--help-xoptions", "--help-all"}),
    "node": frozenset({"-v", "--version", "-h", "--help", "--v8-options"}),
    "perl": frozenset({"-v", "-V", "-h"}),
    "ruby": frozenset({"--version", "-h", "--help", "--copyright"}),
    "php": frozenset({"-v", "--version", "-h", "--help", "-i", "--info", "-m", "--modules"}),
    "deno": frozenset({"-V", "--version", "-h", "--help"}),
    "bun": frozenset({"-v", "--version", "-h", "--help", "--revision"}),
    "Rscript": frozenset({"--version", "--help"}),
}


def _prints_and_exits(base: str, word: str) -> bool:
    """Is ``word`` an option of interpreter ``base`` that prints and exits (_PRINTS_AND_EXITS;
    python's -V, -VV, -h, -? also in a cluster of short options)?"""
    if word in _PRINTS_AND_EXITS.get(base, ()):
        return True
    if base == "perl" and word.startswith("-V:"):
        return True
    return base == "python" and any(_python_short(word, letter) >= 0 for letter in "Vh?")


def _interpreter_reads_input(name: str, args: list[str]) -> bool:
    """Does an interpreter called with ``args`` read its program from its input: no script,
    module or inline code named, or ``-``, ``/dev/stdin``, ``<(…)`` as the script?"""
    i = 0
    base = program_base(name)
    round13 = _reads_as_of((0, 12, 4))
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a == "-":
            return True
        if a.startswith("-") and len(a) > 1:
            if base == "python" and _reads_as_of((0, 12, 3)) and _python_short(a, "i") >= 0:
                return True  # `python3 -i tool.py`: the REPL reads its input after the script
            if base == "perl" and round13 and _PERL_DEBUGGER.fullmatch(a):
                return True  # `perl -d tool.pl`: the debugger reads its input (sec13)
            if _reads_as_of((0, 12, 5)) and _prints_and_exits(base, a):
                return False  # `node -v`, `python3 --version`: no program is read (sec14)
            at = (
                _python_short(a, "m")
                if base == "python" and round13
                else (0 if a.startswith("-m") else -1)
            )
            if at >= 0 and base == "python" and _reads_as_of((0, 12, 3)):
                module = a[at + 2 :] or (args[i + 1] if i + 1 < len(args) else "")
                if module in _STDIN_MODULES or (round13 and module in _STDIN_MODULES_0124):
                    return True  # `python3 -m code`: the REPL reads its input (sec12)
                if round13 and module in _SCRIPT_MODULES:
                    # `python3 -m cProfile /dev/stdin`: the script it runs is the input (sec13)
                    after = args[i + (1 if a[at + 2 :] else 2) :]
                    return any(_input_script(w) for w in after)
                if round13:
                    return False  # a module (`-Bm json.tool`: -m in a cluster, sec13)
            if base == "node" and round13 and a in _NODE_VALUED:
                i += 2  # `node --title x`: x is the title, not the script (sec13)
                continue
            if base == "python" and round13 and a == "-I":
                i += 1  # python's -I isolates; it takes no value (ruby's and perl's do)
                continue
            if a in ("-m", "-c", "-e", "-E", "-p", "-r", "--eval", "--print", "-x") and not (
                program_base(name) == "node" and a == "-r"
            ):
                return False  # a module, or code given as an argument (asked on its own)
            valued = a in _INTERPRETER_VALUED or (
                a in _INTERPRETER_VALUED_0123 and _reads_as_of((0, 12, 3))
            )
            i += 2 if valued else 1
            continue
        break
    rest = args[i:]
    return not rest or _input_script(rest[0])


_TCL = re.compile(r"(tclsh|wish)[0-9.]*")
# Debian's names of a program built for one machine: perl5.36-x86_64-linux-gnu is perl
_ARCH_SUFFIX = re.compile(r"-[a-z0-9_]+-linux-gnu[a-z0-9_]*$")


def _named(word: str) -> str:
    """``program_name``, also for a name ending in a machine's triplet (sec12:
    `perl5.36-x86_64-linux-gnu -e 'system …'` and a value piped to it ran past deny
    shell(touch:*) — no table knew the name)."""
    name = program_name(word)
    base = word.rsplit("/", 1)[-1]
    if name == base and _reads_as_of((0, 12, 3)) and _ARCH_SUFFIX.search(base):
        return program_name(_ARCH_SUFFIX.sub("", base))
    return name


# Programs that read commands from their input which can run shell commands (since 0.12.5)
_COMMAND_READERS = frozenset(
    {"m4", "gnuplot", "dc", "psql", "mysql", "mariadb", "R", "julia", "octave", "octave-cli"}
)


def _psql_files(args: list[str]) -> list[str]:
    """The files psql runs the commands of (-f FILE, -fFILE, --file FILE, --file=FILE)."""
    files: list[str] = []
    for i, a in enumerate(args):
        if a in ("-f", "--file"):
            files.append(args[i + 1] if i + 1 < len(args) else "-")
        elif a.startswith("--file="):
            files.append(a[len("--file=") :])
        elif a.startswith("-f") and len(a) > 2:
            files.append(a[2:])
    return files


def _other_reader_reads_input(name: str, args: list[str]) -> bool:
    """Does a program that runs the code it reads — no shell, no interpreter of INTERPRETERS —
    read it from its input: make given ``-f -`` (``-f /dev/stdin``, ``--file=-``, in a cluster
    of short options), jshell (a REPL, which reads its input after any script it runs), tclsh
    and wish without a script or with one that is the input (sec12: each ran a value piped to
    it past deny shell(touch:*))."""
    if name == "jshell":
        return True
    if name in _COMMAND_READERS and _reads_as_of((0, 12, 5)):
        # (sec14: a value piped to m4 — syscmd(…) —, gnuplot — system "…" — ran touch past
        # deny shell(touch:*), allowed; dc's !, psql's and mysql's \!, R's system() alike)
        if name in ("psql", "mysql", "mariadb"):
            if any(a.split("=", 1)[0] in ("-c", "--command", "-e", "--execute") for a in args):
                return False
            # `psql -f migrate.sql` reads its commands from the file, not its input (review18:
            # asked for in every command holding a value); `-f -` reads its input
            files = _psql_files(args) if name == "psql" else []
            return not files or any(f == "-" or _input_script(f) for f in files)
        rest = [a for a in args if not a.startswith("-") or a == "-"]
        return not rest or _input_script(rest[0])
    if _TCL.fullmatch(name):
        if _reads_as_of((0, 12, 4)) and args[:1] == ["-encoding"]:
            args = args[2:]  # `tclsh -encoding utf-8`: its value is no script (sec13)
        rest = [a for a in args if not a.startswith("-")]
        return not rest or _input_script(rest[0])
    if program_name(name) != "make":
        return False
    words = iter(args)
    for a in words:
        if a == "--":
            return False
        flag, eq, value = a.partition("=")
        if (
            flag.startswith("--")
            and len(flag) > 2  # (`--f` is --file: make takes any unique prefix)
            and ("--file".startswith(flag) or "--makefile".startswith(flag))
        ):
            if _input_script(value if eq else next(words, "")):
                return True
        elif a[:1] == "-" and a[1:2] != "-":
            for j, letter in enumerate(a[1:], 1):
                if letter == "f":
                    if _input_script(a[j + 1 :] or next(words, "")):
                        return True
                    break
                if letter in "CIoWE":
                    if j == len(a) - 1:
                        next(words, None)
                    break
    return False


def _env_split_string(rest: list[str]) -> str | None:
    """The string ``env -S`` splits into a command line: ``-S X``, ``-SX``, ``-iS X``, ``-S`` in
    any cluster of short options, ``--split-string X`` or ``--split-string=X``."""
    head = rest[0]
    flag, eq, value = head.partition("=")
    # (any unique prefix, as getopt reads one: sec11, `env --spl='touch x'` ran touch unchecked)
    if head.startswith("--split-string") or (
        len(flag) > 2
        and flag.startswith("--s")
        and "--split-string".startswith(flag)
        and _reads_as_of((0, 12, 2))
    ):
        return value if eq else (rest[1] if len(rest) > 1 else None)
    if head.startswith("-") and not head.startswith("--") and "S" in head:
        after = head[head.index("S") + 1 :]
        if head[1 : head.index("S")].strip("iv0") == "":  # only flags before S (-i, -v, -0)
            return after or (rest[1] if len(rest) > 1 else None)
    return None


def _shifted(expansions: dict[int, str], start: int, end: int) -> dict[int, str]:
    """The expansions of ``argv[start:end]``, by index into that slice: a wrapped command's
    words keep what the shell does to them (a fourth review: `timeout 5 sed "s/a/{{…}}/"`,
    `nice tar -xf a.tar "{{…}}"` ran what the value said — the value checks saw no value)."""
    return {i - start: how for i, how in expansions.items() if start <= i < end}


# Package and environment tools that run a command line they are given as one string
# (a review of 0.12.1: `npx -c 'touch x'`, `git submodule foreach 'touch x'` ran past deny
# shell(touch:*)). (`poetry run CMD …` and the like run a program, not a line: since 0.12.4's
# reading that program is a command the rules see (_runner_reading, in _unwrap) — a deny or ask
# rule naming it holds, and a rule naming `uv run:*` is the person's answer for the rest of
# what it runs, as for npx's packages: shell_rules._runner_vouched.) Every such
# option is read, not the first: npm and nix-shell take the last one given (review13: `npx -c
# 'echo hi' -c 'touch x'` ran touch), and npm reads `--c`/`--ca`/`--cal` and `-c=…` as --call.
_RUN_LINES = {
    "npx": ("-c", "--c", "--ca", "--cal", "--call"), "pnpx": ("-c",),
    "nix-shell": ("--run", "--command"),
}  # fmt: skip
# npm's words for exec: the command, its alias and its abbreviations (`npm exe`, `npm x`).
_NPM_EXEC = frozenset({"exec", "exe", "x"})
# git subcommands' options whose value is a command line git runs with a shell (review13: each
# ran touch past deny shell(touch:*) in bash). git reads a long option by any unique prefix
# (`--exe`), a short one's value stuck to it (`-xCMD`), and a long one's after '='.
_GIT_RUN_LINES: dict[str, tuple[str, ...]] = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "filter-branch": (
        "--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter",
        "--commit-filter", "--tag-name-filter",
    ),
    "fetch": ("--upload-pack",), "pull": ("--upload-pack",), "ls-remote": ("--upload-pack",),
    "clone": ("-u", "--upload-pack"), "archive": ("--exec",),
    "push": ("--receive-pack", "--exec"), "send-pack": ("--receive-pack", "--exec"),
}  # fmt: skip


def _git_run_lines(sub: str, args: list[str]) -> list[str]:
    """The command lines ``git sub args`` runs through a shell by its options (_GIT_RUN_LINES)."""
    flags = _GIT_RUN_LINES.get(sub, ())
    lines = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        long = name.startswith("--") and len(name) > 2
        if long and any(f.startswith(name) for f in flags if f.startswith("--")):
            if eq:
                lines.append(value)
            elif i + 1 < len(args):
                lines.append(args[i + 1])
        elif not long and arg[:2] in flags:
            if len(arg) > 2:
                lines.append(arg[2:])
            elif i + 1 < len(args):
                lines.append(args[i + 1])
        elif not long and arg[:1] == "-" and _reads_as_of((0, 12, 2)):
            # in a cluster of short options (sec11: `git rebase -qx 'touch x'` ran touch past
            # deny shell(touch:*)): its value is the rest of the cluster, or the next word
            at = next((j for j in range(2, len(arg)) if f"-{arg[j]}" in flags), None)
            if at is not None:
                lines.append(arg[at + 1 :] or (args[i + 1] if i + 1 < len(args) else ""))
    return lines


def _tool_runner(name: str, args: list[str], run_line: Any) -> bool:
    """Unwrap the command line a package or environment tool runs; True when it runs one."""
    flags = _RUN_LINES.get(name)
    if name == "npm" and _NPM_EXEC.intersection(args[: args.index("--") if "--" in args else None]):
        # (global options may come first, `npm --yes exec`, `npm --prefix . x`: a word among
        # its arguments, not only the first, is read as the command)
        flags = _RUN_LINES["npx"]
    if name == "git":
        sub = normalized(["git", *args])[1:]  # (git -C dir, --no-pager … submodule foreach)
        words = [a for a in sub[1:] if not a.startswith("-")]  # (`submodule --quiet foreach`)
        if sub[:1] == ["submodule"] and words[:1] == ["foreach"]:
            at = sub.index("foreach")
            rest = [a for a in sub[at + 1 :] if a not in ("--recursive", "-q", "--quiet")]
            if rest:
                run_line(" ".join(rest), "git submodule foreach")
            return True
        lines = _git_run_lines(sub[0], sub[1:]) if sub else []
        if sub[:2] == ["bisect", "run"] and len(sub) > 2:  # (the command and its arguments)
            lines.append(shlex.join(sub[2:]))
        for line in lines:
            run_line(line, f"git {sub[0]}")
        if lines:
            return True
    if flags is None:
        return False
    ran = False
    for i, arg in enumerate(args):
        if arg == "--":
            break
        flag, eq, value = arg.partition("=")
        if (
            "-c" in flags
            and _reads_as_of((0, 12, 2))
            and arg[:1] == "-"
            and arg[1:2] != "-"
            and len(flag) > 2
            and "c" in flag[1:]
        ):
            # a cluster of npm's short options (sec11: `npx -yc 'touch x'` ran touch past deny
            # shell(touch:*)): each letter is one, and -c takes the next word
            if i + 1 < len(args):
                run_line(args[i + 1], f"{name} {flag}")
            ran = True
            continue
        if flag not in flags or (eq and not flag.startswith("-")):
            continue
        if eq:
            run_line(value, name)
        elif i + 1 < len(args):
            run_line(args[i + 1], f"{name} {flag}")
        ran = True
    return ran


def _unwrap(
    argv: list[str], out: list[ShellCommand], depth: int, expansions: dict[int, str] | None = None
) -> None:
    """Also record what shells, eval and wrappers run on our behalf."""
    expansions = expansions or {}
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    runtime = {argv[i] for i, how in expansions.items() if how == "runtime"}

    def run_line(code: str, what: str) -> None:
        """``code``, a command line run by a shell: one the outer shell expands first is code
        made of what it expands (a fourth review: `bash -c "echo {{…}}"`, `eval echo "{{…}}"`,
        `trap "… {{…}}" EXIT` ran a result's `x; cmd` unasked)."""
        if code in runtime and _HOLDS_VALUES.get():
            raise ShellParseError(
                f"the command line {what} runs, {code[:60]!r}, holds what the shell expands "
                "when it runs (a value, a variable, $(…)), which it then reads as code; pass "
                'values as arguments (sh -c \'… "$1"\' _ "{{…}}") — it cannot be checked'
            )
        _parse_into(code, out, depth + 1)

    if name == "fish" and _is_shell(name):
        lines, i = _fish_options(args)
        for line in lines:
            run_line(line, "fish -c")
        if not lines and (i >= len(args) or _input_script(args[i])):
            out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
        return
    if _is_shell(name):
        rcfile = _shell_rcfile(args) if _reads_as_of((0, 12, 5)) else None
        if rcfile is not None and _input_script(rcfile):
            out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
        code = _shell_command_string(name, args)
        if code is not None:
            run_line(code, f"{name} -c")
        elif (
            _shell_reads_input(args)
            if _reads_as_of((0, 12, 2))
            else not any(a and not a.startswith("-") for a in args)
        ):
            out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
        return
    interpreter = name if name in INTERPRETERS else None
    if interpreter is None and _reads_as_of((0, 12, 3)) and _named(name) in INTERPRETERS:
        interpreter = _named(name)  # python3.11, perl5.36.0, pypy3 (sec12)
    if interpreter and _reads_as_of((0, 12, 2)) and _interpreter_reads_input(interpreter, args):
        # `printf %s "{{…}}" | python3`: the value is the program (sec11)
        out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
        return
    if _reads_as_of((0, 12, 3)) and _other_reader_reads_input(name, args):
        # `printf %s "{{…}}" | make -f -`, `| jshell`, `| tclsh8.6` (sec12)
        out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
        return
    if name == "runuser" and "-c" in args[:-1]:  # runuser -u U -c 'command line'
        run_line(args[args.index("-c") + 1], "runuser -c")
        return
    if name == "runuser" and _reads_as_of((0, 12, 2)):
        # (sec11: `runuser root --command 'touch x'`, --command=…, --session-command, -lc …)
        for i, arg in enumerate(args):
            if arg == "--":
                break
            flag, eq, value = arg.partition("=")
            if flag.startswith("--") and len(flag) > 3 and "--command".startswith(flag):
                line = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            elif flag.startswith("--") and len(flag) > 3 and "--session-command".startswith(flag):
                line = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            elif arg[:1] == "-" and arg[1:2] != "-" and "c" in arg[1:]:
                at = arg.index("c", 1)
                line = arg[at + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
            else:
                continue
            run_line(line, "runuser -c")
            return
    if name == "alias":  # alias NAME='command line': what NAME runs once aliases expand
        for arg in args:
            _, eq, value = arg.partition("=")
            if eq and value.strip():
                run_line(arg if arg in runtime else value, "alias")
        return
    if name == "eval":
        for arg in args if _reads_as_of((0, 12, 1)) else []:
            run_line(arg, "eval")  # each word, expanded, is part of the line eval reads
        if args:
            _parse_into(" ".join(args), out, depth + 1)
        return
    if name == "trap":  # trap ACTION SIGNAL…: ACTION is a command line, run when the signal comes
        rest = args[1:] if args[:1] == ["--"] else args
        if len(rest) > 1 and rest[0] != "-" and not rest[0].startswith("-") and rest[0].strip():
            run_line(rest[0], "trap")
        return
    if name in ("mapfile", "readarray", "compgen", "complete"):
        # mapfile -C CALLBACK evaluates CALLBACK (with two words added) every -c lines;
        # compgen/complete -C COMMAND runs COMMAND: each is a command line
        for flag, arg in zip(args, args[1:], strict=False):
            if flag == "-C":
                run_line(arg, f"{name} -C")
        return
    if name in ("find", "fd"):  # find … -exec CMD … ; runs CMD
        for i, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch"):
                inner = []
                for word in args[i + 1 :]:
                    if word in (";", "\\;", "+"):
                        break
                    inner.append(word)
                if inner:
                    _refuse_runtime_program(inner[0], f"{name} {arg}")
                    shifted = _shifted(expansions, i + 2, i + 2 + len(inner))
                    out.append(ShellCommand(inner, expansions=shifted))
                    _unwrap(inner, out, depth + 1, shifted)
        return
    if name == "flock":  # flock FILE -c 'command line': run by sh -c
        for i, arg in enumerate(args[:-1]):
            if arg in ("-c", "--command"):
                run_line(args[i + 1], "flock -c")
                return
    if _reads_as_of((0, 12, 1)) and _tool_runner(name, args, run_line):
        return
    if _reads_as_of((0, 12, 5)):
        for line, words in _runner_lines(argv):
            if _HOLDS_VALUES.get() and runtime & set(words):
                raise ShellParseError(
                    f"{name} gives a shell a command line made of its words, and one of them is "
                    "what the shell expands when it runs (a value, a variable, $(…)), which that "
                    "shell then reads as code; pass values as arguments — it cannot be checked"
                )
            _parse_into(line, out, depth + 1)
        if _uv_runs_its_input(argv):
            # `printf %s "{{…}}" | uv run -`: uv runs the Python script it reads (sec14)
            out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
        if _starts_a_shell(name, args):
            # `nix shell pkgs`, `nix develop`, `devbox shell`, given no command, start a shell
            # reading its input (sec14: `printf %s "{{…}}" | nix shell nixpkgs#hello`, by docs)
            out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
    if _reads_as_of((0, 12, 4)) and (reading := _runner_reading(argv)) is not None:
        # The program a runner runs is a command of its own, as a wrapper's is (sec13b: `npx
        # touch x`, `npm exec -- touch x` ran touch past deny shell(touch:*)) — and so is each
        # word read as an option's value that may be it (`npx --no-install touch x`); what it
        # reads is read too (sec13: `printf %s "{{…}}" | npx node` ran the value as code).
        # A rule allowing the runner still answers for what it runs (shell_rules._runner_vouched).
        at, maybe = reading
        if depth > _MAX_DEPTH and (maybe or at < len(argv)):
            raise ShellParseError("commands nest too deeply to check")  # (npx npx npx … x)
        if len(maybe) > _MAX_MAYBE_PROGRAMS:
            raise ShellParseError(
                f"{len(maybe)} of {name}'s words may each be an option's value or the program it "
                "runs; it cannot be checked"
            )
        runner = next((p for p in reversed(out) if p.argv is argv), None)
        seen = _RUNNERS_RUN.get()
        for i in [*maybe, *([at] if at < len(argv) else [])]:
            inner, shifted = argv[i:], _shifted(expansions, i, len(argv))
            key = (*inner, *sorted(shifted.items()))
            if seen is not None and (known := seen.get(key)) is not None:
                if known.maybe and i == at:  # (the program here: decided in full)
                    known.maybe, known.run_by = False, runner
                continue
            part = ShellCommand(inner, expansions=shifted, run_by=runner, maybe=i != at)
            if seen is not None:
                seen[key] = part
            out.append(part)
            before = len(out)
            _unwrap(inner, out, depth + 1, shifted)
            for found in out[before:]:
                if found.argv == [f"{inner[0].rsplit('/', 1)[-1]}{_READS_INPUT}"]:
                    # (`mise exec -- node -v`: what the program does, as the program is)
                    found.run_by, found.maybe = runner, part.maybe
        return
    if name in WRAPPERS:
        takes_value, positional = WRAPPERS[name]
        rest = list(args)
        while rest:
            head = rest[0]
            if name == "env" and (split := _env_split_string(rest)) is not None:
                # env -S "cmd args" (-iS…, -S'…', --split-string=…): a command line in a string
                run_line(head if head in runtime else split, "env -S")
                return
            if head == "--":
                rest.pop(0)
                break
            if head.startswith("-") and _reads_as_of((0, 12, 2)):
                rest.pop(0)
                if _wrapper_option_takes_next(name, head, takes_value) and rest:
                    rest.pop(0)
                continue
            if head.startswith("-"):
                rest.pop(0)
                if head in takes_value and rest:
                    rest.pop(0)
                continue
            if name in ("env", "sudo", "doas") and "=" in head:
                # env LD_PRELOAD=… cmd sets what LD_PRELOAD=… cmd does (and BASH_FUNC_x%%=…
                # gives a bash it starts a function): checked as that assignment
                _check_assignment(head)
                rest.pop(0)
                continue
            break
        rest = rest[positional:]
        if _reads_as_of((0, 12, 4)):
            if not rest and _runs_a_shell(name, args):
                # `chroot /` runs $SHELL -i, `sudo -s` the user's shell: a shell reading its
                # input (sec13: `printf %s "{{…}}" | chroot /` ran the value as commands)
                out.append(ShellCommand([f"{name}{_READS_INPUT}"]))
                return
            if rest and name == "runuser" and not option_given(args, "--user", 3, "u", "gGsw"):
                # su's form, `runuser [-l] USER [ARGS]`: the user's shell run with ARGS — no
                # program named USER (sec13: `… | runuser root` ran the value as commands)
                rest = ["sh", *rest[1:]]
        if rest:
            _refuse_runtime_program(rest[0], name)
        if name == "watch" and rest and not {"-x", "--exec"} & set(args):
            # watch joins its arguments into one command line for sh -c: a value among them is
            # code there (sec11: `watch -g echo "{{…}}"` ran a value 'x; cmd'), as in bash -c
            if _reads_as_of((0, 12, 2)) and _HOLDS_VALUES.get() and runtime & set(rest):
                raise ShellParseError(
                    "watch joins its words into a command line for sh -c, and one of them is "
                    "what the shell expands when it runs (a value, a variable, $(…)), which sh "
                    "then reads as code; write watch -x … — it cannot be checked"
                )
            _parse_into(" ".join(rest), out, depth + 1)
            return
        if rest:
            shifted = _shifted(expansions, len(argv) - len(rest), len(argv))
            if name == "xargs" and _HOLDS_VALUES.get() and _reads_as_of((0, 12, 2)):
                rest, shifted = _xargs_input(args[: len(args) - len(rest)], rest, shifted)
            out.append(ShellCommand(rest, expansions=shifted))
            _unwrap(rest, out, depth + 1, shifted)


# -- what rules match, and what can run code the checker cannot see ---------------------------

# Global options that change where a program works, not what it does: `git -C . push` is a
# push. Options followed by a value are listed with True.
GLOBAL_OPTIONS: dict[str, dict[str, bool]] = {
    "git": {
        "-C": True,
        "--git-dir": True,
        "--work-tree": True,
        "--namespace": True,
        "-P": False,
        "--no-pager": False,
        "-p": False,
        "--paginate": False,
        "--bare": False,
        "--no-replace-objects": False,
        "--literal-pathspecs": False,
        "--glob-pathspecs": False,
        "--noglob-pathspecs": False,
        "--icase-pathspecs": False,
        "--no-optional-locks": False,
    },
    "make": {
        "-C": True,
        "--directory": True,
        "-s": False,
        "--silent": False,
        "-j": True,
        "--jobs": True,
        "-k": False,
    },
    "npm": {"--prefix": True, "-C": True, "--silent": False, "-s": False},
    "docker": {
        "-H": True,
        "--host": True,
        "--context": True,
        "-c": True,
        "--log-level": True,
        "-l": True,
        "-D": False,
    },
    "kubectl": {
        "--context": True,
        "--kubeconfig": True,
        "-n": True,
        "--namespace": True,
        "--cluster": True,
        "--user": True,
    },
}
INTERPRETERS = {
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "deno",
    "bun",
    "Rscript",
}
# The short options of each interpreter that take code (python -c, perl -e/-E, node -e/-p …)
_INLINE_CODE_LETTERS = {
    "python": "c",
    "perl": "eE",
    "ruby": "e",
    "node": "ep",
    "php": "r",
    "lua": "e",
}


# The options of an interpreter whose value may be the next word, by the table's name for it: a
# superset (one read as taking a value that does not makes the checker read on, into the
# script's own words — it asks more, never less)
_OWN_VALUED = {
    "python": frozenset({"-W", "-X", "--check-hash-based-pycs"}),
    "perl": frozenset({"-I", "-M", "-m", "-x", "-0", "-l", "-C", "-i", "-d", "-D", "-F", "-V"}),
    "ruby": frozenset({"-I", "-r", "-C", "-E", "-x", "-F", "-0", "-K", "-W", "--encoding"}),
}


def _interpreter_own_words(name: str, args: list[str]) -> tuple[list[str], str | None]:
    """The words python, perl, ruby or node read as their own options — up to the script,
    whose own arguments come after it (`python3 tool.py -c config.yml`, `python3 -m pytest -x`,
    `node app.js -e production`: the script's, not code; review of 0.12.3, sec13: each was asked
    as code given in its arguments) — and the module python runs with -m (None). Any other
    interpreter: all its words."""
    base = program_base(name)
    if base not in _OWN_VALUED and base != "node":
        return args, None
    valued = (
        _NODE_VALUED | {"-r", "--require", "--import", "--loader"}
        if base == "node"
        else (_OWN_VALUED[base])
    )
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or not a.startswith("-") or a == "-":
            return args[: i + 1], None  # the script (after -- or -, its name or its input)
        if base == "python" and (at := _python_short(a, "m")) >= 0:
            module = a[at + 2 :] or (args[i + 1] if i + 1 < len(args) else "")
            return args[: i + (1 if a[at + 2 :] else 2)], module
        if base == "python" and _python_short(a, "c") >= 0:
            return args[: i + 2], None  # -c CODE: the code, then sys.argv
        i += 2 if a in valued else 1
    return args, None


def program_base(name: str) -> str:
    """python3 → python, nodejs → node, python2 → python (the table's name for an interpreter)."""
    return {"python2": "python", "python3": "python", "nodejs": "node"}.get(name, name)


_AWKS = {"awk", "gawk", "mawk", "nawk", "busybox-awk"}


_MAX_SUBCOMMAND_READINGS = 16
# Options of GLOBAL_OPTIONS whose value may be left out (make's -j, --jobs: `make -j deploy`
# runs the target deploy with no limit): the word after one may be the subcommand
_OPTIONAL_VALUES = frozenset({"-j", "--jobs"})


# Programs whose management commands name the short subcommands again (`docker container run`
# runs as `docker run`), and the long forms whose short one has another name.
_MANAGEMENT: dict[str, frozenset[str]] = {
    "docker": frozenset({"container", "image", "builder"}),
    "podman": frozenset({"container", "image"}),
}
# (0.12.6: nerdctl's, as docker's — its docs: `nerdctl container run` is `nerdctl run`)
_MANAGEMENT_15: dict[str, frozenset[str]] = {
    **_MANAGEMENT,
    "nerdctl": frozenset({"container", "image", "builder"}),
}
_ALIASES: dict[tuple[str, str], str] = {
    ("container", "ls"): "ps",
    ("container", "list"): "ps",
    ("container", "remove"): "rm",
    ("image", "rm"): "rmi",
    ("image", "remove"): "rmi",
    ("image", "ls"): "images",
    ("image", "list"): "images",
}
# Programs that parse their own options before the subcommand and take `--` there as the end of
# them, the next word the subcommand (sec15: `docker -- run alpine` created a container — its
# API saw POST /containers/create — past deny shell(docker run:*))
_DASHDASH_THEN_SUBCOMMAND = frozenset({"docker", "podman", "nerdctl"})
# npm 11's commands and aliases (lib/utils/cmd-list.js); npm also runs a unique prefix of one
# (sec15: `npm pu` published to a registry, `npm un x` uninstalled, past deny shell(npm
# publish:*), shell(npm uninstall:*))
_NPM_COMMANDS = (
    "access adduser approve-scripts audit bugs cache ci completion config dedupe deny-scripts "
    "deprecate diff dist-tag docs doctor edit exec explain explore find-dupes fund get help "
    "help-search init install install-ci-test install-scripts install-test link ll login logout "
    "ls org outdated owner pack ping pkg prefix profile prune publish query rebuild repo restart "
    "root run sbom search set shrinkwrap stage star stars start stop team test token trust "
    "undeprecate uninstall unpublish unstar update version view whoami"
).split()
_NPM_ALIASES = {
    "author": "owner", "home": "docs", "issues": "bugs", "info": "view", "show": "view",
    "find": "search", "add": "install", "unlink": "uninstall", "remove": "uninstall",
    "rm": "uninstall", "r": "uninstall", "un": "uninstall", "rb": "rebuild", "list": "ls",
    "ln": "link", "create": "init", "i": "install", "it": "install-test",
    "cit": "install-ci-test", "u": "update", "up": "update", "c": "config", "s": "search",
    "se": "search", "tst": "test", "t": "test", "ddp": "dedupe", "v": "view",
    "run-script": "run", "clean-install": "ci", "clean-install-test": "install-ci-test",
    "x": "exec", "why": "explain", "la": "ll", "verison": "version", "ic": "ci", "innit": "init",
    "in": "install", "ins": "install", "inst": "install", "insta": "install",
    "instal": "install", "isnt": "install", "isnta": "install", "isntal": "install",
    "isntall": "install", "install-clean": "ci", "isntall-clean": "ci", "hlep": "help",
    "dist-tags": "dist-tag", "upgrade": "update", "udpate": "update", "rum": "run",
    "sit": "install-ci-test", "urn": "run", "ogr": "org", "add-user": "adduser",
}  # fmt: skip


def _npm_command(word: str) -> str:
    """The npm command ``word`` runs: an alias's, a unique prefix's (npm's abbrev), or itself."""
    names = [*_NPM_COMMANDS, *_NPM_ALIASES]
    if word not in names:
        found = [n for n in names if n.startswith(word)]
        word = found[0] if len(found) == 1 else word
    return _NPM_ALIASES.get(word, word)


# Other CLIs' aliases of a subcommand, by (program, the words before it): each CLI's source
_SUBCOMMAND_ALIASES: dict[tuple[str, ...], dict[str, str]] = {
    # helm's uninstall: Aliases un, del, delete (cmd/helm/uninstall.go); list: ls
    ("helm",): {"un": "uninstall", "del": "uninstall", "delete": "uninstall", "ls": "list"},
    # docker's volume/network/context/plugin/secret/config/node/service rm: alias remove
    **{
        (p, group): {"remove": "rm", "list": "ls"}
        for p in ("docker", "podman", "nerdctl")
        for group in ("volume", "network", "context", "plugin", "secret", "config", "node",
                      "service", "stack", "system", "manifest", "pod")
    },
    # gh's secret/variable delete: alias remove (pkg/cmd/secret/delete, variable/delete)
    ("gh", "secret"): {"remove": "delete"},
    ("gh", "variable"): {"remove": "delete"},
}  # fmt: skip


def subcommand_alias(program: str, before: tuple[str, ...], word: str) -> str:
    """The subcommand ``word`` (after ``program`` and the subcommand words ``before``) runs, by
    its CLI's aliases (0.12.6; ``word`` itself in older readings)."""
    if not _reads_as_of((0, 12, 6)):
        return word
    if program == "npm" and not before:
        return _npm_command(word)
    return _SUBCOMMAND_ALIASES.get((program, *before), {}).get(word, word)


def subcommand_readings(argv: list[str], named: frozenset[str] | None = None) -> list[list[str]]:
    """``argv`` without its leading options, read every way the program may read them — for
    deny and ask rules, which a global option the checker does not know must not hide the
    subcommand from (sec14: `kubectl -nprod delete ns x`, `kubectl -v 9 delete`, `docker --tls
    run`, `docker -ldebug run`, `npm --registry URL publish` ran the subcommand past deny
    shell(kubectl delete:*), shell(docker run:*), shell(npm publish:*)). Each word past an
    option written without '=' may be that option's value or the subcommand: each reading
    that may name the subcommand is given, up to the first word that surely does not.
    ``named``: the only words the rules name as a subcommand of this program — readings that
    begin with another are left out, and no word of the command is left unread (review18:
    past 16 readings, `kubectl -v 1 …×16 delete ns x` was allowed under deny shell(kubectl
    delete:*), and kubectl deletes); None: every reading, up to _MAX_SUBCOMMAND_READINGS.
    Since 0.12.6 the subcommand is also read as the one its alias names (`helm del` is `helm
    uninstall`, `npm pu` is `npm publish`), and past docker's `--` (`docker -- run`)."""
    name = argv[0].rsplit("/", 1)[-1]
    known = GLOBAL_OPTIONS.get(name, {})
    newest = _reads_as_of((0, 12, 6))
    management = _MANAGEMENT_15 if newest else _MANAGEMENT
    out: list[list[str]] = []
    last = len(argv) if named is not None else min(len(argv), 1 + 4 * _MAX_SUBCOMMAND_READINGS)
    for i in range(1, last):
        word = argv[i]
        if word == "--":
            if newest and name in _DASHDASH_THEN_SUBCOMMAND and i + 1 < len(argv):
                sub = argv[i + 1]
                if named is None or sub in named:
                    out.append([name, sub, *argv[i + 2 :]])
            break
        if word.startswith("-") and len(word) > 1:
            continue
        if i == 1 and word.startswith("+") and name in ("cargo", "rustc", "rustup", "rustdoc"):
            continue  # (rustup's toolchain: `cargo +nightly publish`)
        if known.get(argv[i - 1]) and argv[i - 1] not in _OPTIONAL_VALUES:
            # surely the value of an option the checker knows takes one (review18: `make -C
            # deploy build` was denied under deny shell(make deploy:*), `git -C push status`
            # under deny shell(git push:*) — normalized() reads them as make build, git status)
            continue
        if named is None or word in named:
            out.append([name, *argv[i:]])
        alias = subcommand_alias(name, (), word)
        if alias != word and (named is None or alias in named):
            out.append([name, alias, *argv[i + 1 :]])
        if newest and name == "terraform" and word == "apply" and "-destroy" in argv[i + 1 :]:
            # `terraform destroy` is an alias of `terraform apply -destroy` (its docs; sec15:
            # apply -destroy ran the destroy past deny shell(terraform destroy:*))
            if named is None or "destroy" in named:
                out.append([name, "destroy", *argv[i + 1 :]])
        if word in management.get(name, ()) and i + 1 < len(argv):
            # docker's management commands: `docker container run` is `docker run`, `docker
            # image rm` is `docker rmi` — a rule on the short form holds for the long one
            sub = _ALIASES.get((word, argv[i + 1]), argv[i + 1])
            if named is None or sub in named:
                out.append([name, sub, *argv[i + 2 :]])
        before = argv[i - 1]
        if not (before.startswith("-") and len(before) > 1 and "=" not in before):
            break  # (surely no option's value: the subcommand, or the program's own word)
        if named is None and len(out) >= _MAX_SUBCOMMAND_READINGS:
            break
    return out


def deeper_readings(reading: list[str], named: frozenset[str] | None) -> list[list[str]]:
    """A subcommand reading (``[program, sub, …]``) read again past the options between ``sub``
    and its own subcommand, and by that one's aliases (0.12.6; sec15: `gh pr -R o/r merge 1`
    merged past deny shell(gh pr merge:*), `aws s3 --region r rm s3://b/k` deleted past deny
    shell(aws s3 rm:*), `kubectl config --kubeconfig k delete-context c` past deny
    shell(kubectl config delete-context:*), `docker volume remove v` past deny shell(docker
    volume rm:*) — each CLI reads options between its subcommand's words). ``named``: the
    words the rules name after ``sub``."""
    if not _reads_as_of((0, 12, 6)) or len(reading) < 3:
        return []
    program, sub, rest = reading[0], reading[1], reading[2:]
    out: list[list[str]] = []
    for i, word in enumerate(rest):
        if word == "--":
            break
        if word.startswith("-") and len(word) > 1:
            continue
        for w in dict.fromkeys((word, subcommand_alias(program, (sub,), word))):
            if named is None or w in named:
                out.append([program, sub, w, *rest[i + 1 :]])
        before = rest[i - 1] if i else sub
        if not (before.startswith("-") and len(before) > 1 and "=" not in before):
            break  # (surely no option's value: the subcommand's own subcommand, or a word)
    return out


def normalized(argv: list[str]) -> list[str]:
    """``argv`` without the global options of :data:`GLOBAL_OPTIONS` (``git -C x push`` → ``git push``)."""
    name = argv[0].rsplit("/", 1)[-1]
    table = GLOBAL_OPTIONS.get(name)
    if not table:
        return [name, *argv[1:]]
    out, rest = [name], argv[1:]
    while rest:
        head = rest[0]
        key, eq, _ = head.partition("=")
        if key in table:
            rest = rest[1:] if eq or not table[key] else rest[2:]
            continue
        break
    return out + rest


# Programs that run the command they are given and that the checker does not unwrap as it
# does WRAPPERS (their options are many, or their command comes in another shape).
_UNFOLLOWED_RUNNERS = frozenset(
    "valgrind perf sg newgrp catchsegv chronic ifne faketime numactl cgexec firejail proot "
    "torsocks tsocks proxychains proxychains4 xvfb-run dbus-run-session dbus-launch rlwrap "
    "daemonize start-stop-daemon tmux screen ssh-agent expect capsh bwrap entr parallel sem "
    # util-linux's setarch and its names (each runs its command: `linux64 touch x`), SELinux's
    "setarch linux32 linux64 i386 x86_64 uname26 runcon "
    # (sec11: each ran touch past deny shell(touch:*) unasked — logsave runs its command,
    # run-parts every program of a folder, ed/red a `!cmd` line or a file named '!cmd', vim by
    # its other names (view, rview, rvim, vimdiff, editor …) its -c commands)
    "logsave run-parts ed red view rview rvim vimdiff rvimdiff editor sensible-editor "
    "sensible-pager pager".split()
)
_VERSIONED_INTERPRETERS = frozenset({"python", "perl", "ruby", "node", "php", "lua"})


_SSH_RUNS = re.compile(r"^\s*(proxycommand|localcommand|knownhostscommand|match)\b", re.I)


def _ssh_runs_locally(name: str, args: list[str]) -> bool:
    """An ssh option that runs a program here: -o ProxyCommand/LocalCommand/KnownHostsCommand/
    Match exec (attached, or the next word), a config file (-F, which may set them), scp's and
    sftp's -S program, sftp's -D server program (review14)."""
    for i, a in enumerate(args):
        if a == "--" or not a.startswith("-"):
            continue
        letters = a[1:]
        for j, letter in enumerate(letters):
            if (
                letter in "oFS"
                and not (letter == "S" and name == "ssh")
                or (
                    letter == "D" and name == "sftp"  # sftp -D runs its sftp server program here
                )
            ):
                value = letters[j + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                if letter != "o" or _SSH_RUNS.match(value):
                    return True
                break
    return False


ssh_runs_locally = _ssh_runs_locally  # (shell_rules: under a rule that allows ssh)

# ssh's options that take a value (the rest of a cluster, or the next word)
_SSH_VALUED_LETTERS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


def _ssh_operands(args: list[str]) -> list[str]:
    """ssh's words that are no option nor an option's value: the destination, then the remote
    command (sec13: `ssh -p 2222 host`, `ssh -J bastion host`, `ssh -l me host` were asked as
    running a remote command — the port, the jump host, the user counted as its words)."""
    if not _reads_as_of((0, 12, 4)):
        return [a for a in args if not a.startswith("-")]
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if out or a == "--":
            out += args[i + (a == "--" and not out) :]
            break
        if a.startswith("-") and len(a) > 1:
            for j, letter in enumerate(a[1:], 1):
                if letter in _SSH_VALUED_LETTERS:
                    i += j == len(a) - 1  # its value is the next word
                    break
        else:
            out.append(a)
        i += 1
    return out


def _git_grep_pager(args: list[str]) -> bool:
    """``git grep -O[CMD]`` / ``--open-files-in-pager`` or any unique prefix of it, alone or in
    a cluster of short options (``-nO…``), before the pattern (``args`` from the subcommand on):
    the files found are opened with CMD (review14: `-nO'cmd'`, `--open='cmd'` ran cmd)."""
    if not args or args[0] != "grep":
        return False
    words = iter(args[1:])
    for a in words:
        if a == "--" or not a.startswith("-") or a == "-":
            return False
        if a.startswith("--"):
            flag = a.split("=", 1)[0]
            if len(flag) > 3 and "--open-files-in-pager".startswith(flag):
                return True
            continue
        for j, letter in enumerate(a[1:], 1):
            if letter == "O":
                return True
            if letter in "efABC" or (letter == "m" and j == len(a) - 1):
                if j == len(a) - 1 and letter in "ef":
                    next(words, None)  # its value (a pattern, a file of them) is no option
                break
    return False


def inline_code(argv: list[str]) -> str | None:
    """Why this command may run code the checker cannot see in it (None when it cannot)."""
    return _inline_code(argv) or hidden_code(argv)


def option_given(
    args: list[str], long: str, shortest: int, short: str = "", valued: str = ""
) -> bool:
    """Is option ``long`` among ``args`` (before ``--``), as getopt reads it: ``long`` or a
    prefix of it of at least ``shortest`` characters (the shortest the program takes as
    unique), with or without ``=VALUE``; or its letter ``short`` alone or in a cluster of short
    options — up to a letter of ``valued``, whose value the rest of the cluster is."""
    for word in args:
        if word == "--":
            return False
        flag = word.split("=", 1)[0]
        if flag.startswith("--"):
            if len(flag) >= shortest and long.startswith(flag):
                return True
        elif flag.startswith("-") and short:
            for letter in word[1:]:
                if letter == short:
                    return True
                if letter in valued:
                    break
    return False


def _make_eval(args: list[str]) -> bool:
    """Is make given makefile text to read (``--eval=TEXT``, a unique prefix of it, ``-E
    TEXT``, ``-E`` in a cluster of short options)?"""
    return option_given(args, "--eval", 4, "E", "CfIjlLoOW")


def _inline_code(argv: list[str]) -> str | None:
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    joined = " ".join(args)
    if name == "git":
        i = 0
        # the global options, before the subcommand
        while i < len(args) and args[i].startswith("-"):
            a = args[i]
            if (
                a == "-c"
                or (a.startswith("-c") and not a.startswith("--"))
                or a.startswith(("--config-env", "--exec-path"))
            ):
                return "git -c / --config-env set configuration that can run programs (core.pager, core.sshCommand, aliases)"
            i += 2 if GLOBAL_OPTIONS["git"].get(a) else 1
        if _git_grep_pager(args[i:]):
            return "git grep -O runs the program it names on the files found"
        return None
    if name in _AWKS:
        program = next((a for a in args if not a.startswith("-")), "")
        if (
            re.search(r"system\s*\(|\|\s*getline|\|&|print[^;]*[>|]|printf[^;]*[>|]", program)
            or "-f" in args
        ):
            return f"{name} programs can run commands and write files (system(), pipes, > file)"
        return None
    if name in ("sed", "gsed"):
        if (
            re.search(r"(^|[;}\s])[0-9,$/]*(e|w|W)\b|/(e|w)\b", joined)
            or "-f" in args
            or "--file" in args
        ):
            return "sed's e and w commands run commands and write files"
        return None
    if name not in INTERPRETERS and _named(argv[0]) in _VERSIONED_INTERPRETERS:
        # python3.11, perl5.36.0, node18 … are the interpreters they name (sec11: `python3.11 -c
        # 'import os; os.system("touch x")'` ran touch past deny shell(touch:*) unasked)
        name = _named(argv[0])
    if name in INTERPRETERS:
        if _reads_as_of((0, 12, 4)):
            args, module = _interpreter_own_words(name, args)
            if module == "timeit" or (module == "pdb" and option_given(argv, "--command", 5, "c")):
                # (sec13: `python3 -m timeit "{{…}}"` — and its -s setup — ran a value as Python
                # past deny shell(touch:*); pdb -c runs debugger commands, Python among them)
                return f"{name} -m {module} runs the code given in its arguments"
        if any(a in ("-e", "-c", "-E", "-r", "--eval", "-p", "--print", "-x") for a in args):
            return f"{name} runs the code given in its arguments"
        # …also given in a cluster of short options (a third review: `perl -ne '…'`,
        # `python3 -Bc '…'`, `python3 -c'…'`, `node -pe '…'` were allowed unasked — and a
        # {{…}} value inside such code is code)
        letters = _INLINE_CODE_LETTERS.get(program_base(name), "ceE")
        for a in args:
            if a.startswith("-") and not a.startswith("--") and len(a) > 2:
                if set(a[1:].split("=", 1)[0]) & set(letters):
                    return f"{name} runs the code given in its arguments"
        return None
    if name in ("make", "gmake") and _reads_as_of((0, 12, 3)) and _make_eval(args):
        # (sec12: `make --eval='$(shell touch x)'`, -E, --ev= ran touch past deny shell(touch:*))
        return f"{name} --eval reads its argument as makefile text, whose $(shell …) runs commands"
    if name in ("source", "."):
        return f"{name} runs the commands of a file"
    if name == "hash" and any(a.startswith("-") and "p" in a[1:] for a in args):
        # (a third review: `hash -p /bin/rm ls; ls -rf x` ran rm as "ls")
        return "hash -p makes a command's name run another program"
    if name == "find" and "-delete" in args:
        return "find -delete removes files"
    if name in ("tar", "bsdtar") and re.search(
        r"--to-command|--checkpoint-action|--use-compress-program|(^|\s)-I\b|--rsh-command|"
        r"--info-script|--new-volume-script|-F\b",
        joined,
    ):
        return "tar options that run programs (--to-command, --checkpoint-action, -I …)"
    if name in ("ssh", "rsh") and len(_ssh_operands(args)) > 1:
        return f"{name} runs a command on another machine"
    if name in ("ssh", "scp", "sftp") and _ssh_runs_locally(name, args):
        # (sec11: `ssh -oProxyCommand="touch x" host`, scp's and sftp's likewise, ran touch past
        # deny shell(touch:*) — a value in that place was asked for, a model's own call was not)
        return f"{name} options that run a local program (ProxyCommand, LocalCommand, -F, -S)"
    if name == "rsync" and re.search(r"(^|\s)(-e|--rsh)\b", joined):
        return "rsync -e runs a program"
    if name == "zip" and re.search(r"-TT|--unzip-command", joined):
        return "zip -TT runs a program"
    if (
        name
        in (
            "vi",
            "vim",
            "nvim",
            "ex",
            "less",
            "more",
            "man",
            "gdb",
            "sqlite3",
            "script",
            "su",
            "pkexec",
            "unshare",
            "nsenter",
            "systemd-run",
            "crontab",
            "at",
            "batch",
            "ld.so",
        )
        or program_name(argv[0]) == "ld.so"
    ):
        return f"{name} can run arbitrary commands"
    if name in _UNFOLLOWED_RUNNERS:
        # (a fourth review: `valgrind touch x`, `sg root -c …`, `tmux new …` ran what deny
        # rules refuse: the checker does not read their command as it reads a wrapper's)
        return f"{name} runs the command it is given, which the checker does not follow; run the command itself"
    return None
