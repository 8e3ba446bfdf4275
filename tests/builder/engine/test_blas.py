"""``episodes`` keeps numpy's OpenBLAS to the calling thread (``builder.engine.blas``)."""

from __future__ import annotations

from pathlib import Path

from tests.command_probe import run_alone

# Runs a command, then imports numpy (as a build's later stages do) and counts the threads.
SCRIPT = """
import os, sys
from builder.cli.episodes import main
assert "numpy" not in sys.modules
main(["schema", "--out", sys.argv[1]])
before = len(os.listdir("/proc/self/task"))
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")) - before)
"""


def _run(tmp_path: Path, **env: str) -> list[str]:
    return run_alone(SCRIPT, str(tmp_path / "schema.json"), env=env)


def test_numpy_starts_no_blas_threads_in_the_command(tmp_path: Path) -> None:
    assert _run(tmp_path) == ["1", "0"]


def test_a_thread_count_the_user_set_is_kept(tmp_path: Path) -> None:
    assert _run(tmp_path, OPENBLAS_NUM_THREADS="2")[0] == "2"
