"""The command ends without the interpreter's teardown, but with everything the teardown
would have finished (``builder.cli.leave``)."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from builder import errors
from builder.cli import faults, leave

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "episodes" / "episodes.jsonl"

# A thread still writing, a thread pool never shut down, an exit handler, a large buffered
# output and an object the teardown would finalize; then ``leave`` with the code given.
PROGRAM = """
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from builder.cli.leave import leave

pool = ThreadPoolExecutor(2)
pool.submit(time.sleep, 0).result()  # its workers wait for more: woken, not waited on

class Finalized:
    def __del__(self):
        sys.stderr.write("torn down\\n")

kept = Finalized()
atexit.register(lambda: print("exit handler ran"))
threading.Thread(target=lambda: (time.sleep(0.3), print("thread finished"))).start()
print("x" * 200_000)
leave(int(sys.argv[1]))
"""


def _run(code: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, str(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )


def test_threads_exit_handlers_and_output_are_finished_and_the_code_kept() -> None:
    done = _run(3)
    assert done.returncode == 3
    lines = done.stdout.splitlines()
    assert lines[0] == "x" * 200_000
    # the thread is joined before the exit handlers run, as in the interpreter's shutdown
    assert lines[1:] == ["thread finished", "exit handler ran"]
    assert done.stderr == ""  # nothing torn down: the process ended there


class _Stdout(io.StringIO):
    """Standard output whose last flush fails with ``error``."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def flush(self) -> None:
        raise self.error


def test_a_reader_that_closed_the_pipe_ends_it_as_a_pipes_writer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # ``episodes … | head`` after head has gone
    monkeypatch.setattr(sys, "stdout", _Stdout(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    assert leave._flushed(0) == errors.READER_GONE
    assert leave._flushed(errors.REFUSED) == errors.REFUSED
    assert capsys.readouterr().err == ""


class _Fd:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def test_a_pipe_whose_reader_left_is_told_from_one_still_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    read, write = os.pipe()
    try:
        monkeypatch.setattr(sys, "stdout", _Fd(write))
        assert not faults.reader_gone()
        os.close(read)
        assert faults.reader_gone()
    finally:
        os.close(write)
    with open(tmp_path / "out.txt", "w") as file:
        monkeypatch.setattr(sys, "stdout", file)
        assert not faults.reader_gone()
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # no file behind it
    assert not faults.reader_gone()


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
def test_the_command_into_a_pipe_nobody_reads_ends_quietly(unbuffered: str) -> None:
    """The reader left before the command wrote: ``validate`` stops at its first line, with
    the code a pipe's writer gets and no word of an internal error."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "builder", "validate", str(SAMPLE)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": unbuffered},
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == errors.READER_GONE
    assert done.stderr == ""


def test_output_that_cannot_be_written_is_said_and_fails_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(sys, "stdout", _Stdout(full))
    assert leave._flushed(0) == errors.UNAVAILABLE
    assert leave._flushed(errors.REFUSED) == errors.REFUSED  # the first failure is kept
    said = capsys.readouterr().err.splitlines()
    assert (
        said[0] == "episodes: its output could not be written: [Errno 28] No space left on device"
    )


def test_the_console_script_and_python_m_builder_end_through_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["episodes"] == "builder.cli.leave:run"
    assert "from builder.cli.leave import run" in (ROOT / "builder" / "__main__.py").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "builder", "build", "--no-such-flag"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == errors.USAGE
    assert "--no-such-flag" in done.stderr
