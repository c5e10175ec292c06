"""The command watchdog's two forms (``watchdog.c`` compiled, ``watchdog.py``) behave alike.

Every case runs against both: the worker uses the compiled one where the machine has a C
compiler and the Python one elsewhere, and either must pass output on, record a command's
end before it exits, and kill a command whose worker died or stopped answering.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.sandbox import liveness, native
from activities.tools.shell import recorded_end

FORMS = ["compiled", "python"]


@pytest.fixture(params=FORMS)
def watchdog(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "python":
        return [sys.executable, "-I", "-S", str(native.PYTHON_FORM)]
    binary = native.compiled_watchdog()
    if binary is None:
        pytest.skip("no C compiler here: the compiled watchdog is not built")
    return [str(binary)]


@pytest.fixture
def pulse() -> Iterator[tuple[int, int]]:
    """A pulse pipe the test feeds by hand: (read end for the watchdog, write end)."""
    read, write = os.pipe()
    os.set_inheritable(read, True)
    yield read, write
    for fd in (read, write):
        try:
            os.close(fd)
        except OSError:
            pass


async def _run(
    watchdog: list[str],
    fd: int,
    command: list[str],
    record: Path | None,
    quiet: float = 5,
    limit: int = 1024,
    read_late: float = 0.0,
) -> tuple[int, bytes, bytes]:
    proc = await asyncio.create_subprocess_exec(
        *watchdog,
        str(fd),
        f"{quiet:g}",
        str(record) if record else "-",
        str(limit),
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=(fd,),
    )
    os.close(fd)
    if read_late:
        await asyncio.sleep(read_late)  # a worker busy elsewhere: nothing read meanwhile
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out, err


async def test_output_passes_on_and_the_end_is_recorded_before_exit(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    record = tmp_path / "cmd.json"
    script = "printf 'out\\377\\n'; echo err >&2; exit 3"  # a byte that is not UTF-8
    code, out, err = await _run(watchdog, pulse[0], ["sh", "-c", script], record)
    assert (code, out, err) == (3, b"out\xff\n", b"err\n")
    raw = json.loads(record.read_text())
    assert base64.b64decode(raw["stdoutB64"]) == b"out\xff\n"
    assert raw["stdoutDropped"] == 0 and raw["status"] == 3 and raw["seconds"] >= 0
    done = recorded_end(record, 1024)
    assert done is not None and done.returncode == 3 and done.replayed
    assert done.stdout == "out\ufffd\n" and done.stderr == "err\n"
    assert not list(tmp_path.glob("*.tmp"))  # written through a temporary file, renamed


async def test_the_record_keeps_the_head_and_counts_what_was_cut(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    record = tmp_path / "cmd.json"
    code, out, _ = await _run(
        watchdog, pulse[0], ["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"], record, limit=100
    )
    assert code == 0 and out == b"x" * 5000  # the worker gets it all
    raw = json.loads(record.read_text())
    assert base64.b64decode(raw["stdoutB64"]) == b"x" * 100 and raw["stdoutDropped"] == 4900
    done = recorded_end(record, 100)
    assert done is not None and "4,900 more bytes not shown" in done.stdout


async def test_a_worker_that_reads_late_loses_no_output(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    # 3 MiB: more than a pipe holds and more than the watchdog buffers (1 MiB), so the command
    # waits on its own output until the worker reads: nothing dropped, nothing blocked for good.
    size = 3 * 1024 * 1024
    feed = asyncio.create_task(_feed(pulse[1], 3.0))
    code, out, _ = await _run(
        watchdog, pulse[0], ["head", "-c", str(size), "/dev/urandom"], None, read_late=1.0
    )
    feed.cancel()
    assert code == 0 and len(out) == size


async def _feed(fd: int, seconds: float) -> None:
    """The worker's pulse, by hand: a byte every 0.1 s."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        os.write(fd, b".")
        await asyncio.sleep(0.1)


async def test_a_worker_that_stops_answering_has_its_command_killed(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    record = tmp_path / "cmd.json"
    code, _, err = await _run(watchdog, pulse[0], ["sleep", "30"], record, quiet=0.5)
    assert code == liveness.LOST_EXIT and b"stopped answering for 0.5s" in err
    assert not record.exists()


async def test_a_worker_that_died_has_its_command_killed_at_once(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    record = tmp_path / "cmd.json"
    os.close(pulse[1])  # end of file on the pulse: the worker is gone
    loop = asyncio.get_running_loop()
    began = loop.time()
    code, _, err = await _run(watchdog, pulse[0], ["sleep", "30"], record, quiet=20)
    assert code == liveness.LOST_EXIT and b"the worker died" in err
    assert loop.time() - began < 10 and not record.exists()


async def test_a_command_already_ending_when_its_worker_dies_has_its_end_recorded(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    """Its last act done as the worker dies, a command that ends within the grace is recorded
    (the next attempt returns it) instead of killed (and run again)."""
    record = tmp_path / "cmd.json"
    os.close(pulse[1])  # the worker is gone before the command has quite ended
    # (a short sleep: the watchdog sees the end of file first; a longer one, with the shell's
    # start on a loaded machine, once came past the half-second grace)
    code, out, _ = await _run(watchdog, pulse[0], ["sh", "-c", "sleep 0.05; echo done"], record)
    assert code == 0 and out == b"done\n"
    done = recorded_end(record, 1024)
    assert done is not None and done.stdout == "done\n"


async def test_a_command_killed_by_a_signal_is_reported_as_that_signal(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    record = tmp_path / "cmd.json"
    code, _, _ = await _run(watchdog, pulse[0], ["sh", "-c", "kill -TERM $$"], record)
    assert code == -signal.SIGTERM
    assert json.loads(record.read_text())["status"] == -signal.SIGTERM


async def test_the_command_gets_sigpipe_as_usual(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    # The watchdog ignores SIGPIPE for itself; a command must not inherit that (`yes | head`
    # would then end with write errors instead of quietly).
    code, out, _ = await _run(watchdog, pulse[0], ["grep", "^SigIgn", "/proc/self/status"], None)
    assert code == 0
    ignored = int(out.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))


async def test_a_command_that_cannot_start_ends_with_127(
    watchdog: list[str], pulse: tuple[int, int], tmp_path: Path
):
    code, _, _ = await _run(watchdog, pulse[0], ["/no/such/program"], tmp_path / "cmd.json")
    assert code == 127


def test_the_compiled_form_is_built_once_per_source_in_a_private_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    if native.compiled_watchdog() is None:
        pytest.skip("no C compiler here")
    monkeypatch.setenv("XSKY_CACHE_DIR", str(tmp_path / "cache"))
    native.compiled_watchdog.cache_clear()
    try:
        built = native.compiled_watchdog()
        assert built is not None and built.parent == tmp_path / "cache"
        assert (built.parent.stat().st_mode & 0o777) == 0o700
        mtime = built.stat().st_mtime_ns
        native.compiled_watchdog.cache_clear()
        assert native.compiled_watchdog() == built and built.stat().st_mtime_ns == mtime
        # A folder others may write to is not used: the Python form runs instead.
        shared = tmp_path / "shared"
        shared.mkdir(mode=0o777)
        shared.chmod(0o777)
        monkeypatch.setenv("XSKY_CACHE_DIR", str(shared))
        native.compiled_watchdog.cache_clear()
        assert native.compiled_watchdog() is None
        assert native.watchdog_command()[1:3] == ["-I", "-S"]
    finally:
        native.compiled_watchdog.cache_clear()
