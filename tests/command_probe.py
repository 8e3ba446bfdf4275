"""Code run in a fresh interpreter from the checkout, answering with the last line it prints
(JSON): how a process-wide setting is tested, whether a few lines of code make it or the
``episodes`` command does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# The command, with ``probe`` (an expression printing one JSON line) called at its exit.
_COMMAND = """
import atexit, json, runpy, sys
{setup}
atexit.register(lambda: print(json.dumps({probe})))
sys.argv = ["episodes", *sys.argv[1:]]
runpy.run_module("builder", run_name="__main__")
"""


def run_python(code: str, *args: str, env: Mapping[str, str] | None = None) -> tuple[str, Any]:
    """``code`` run with ``args`` (and ``env`` over this environment): its output, and its
    last line read as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    return done.stdout, json.loads(done.stdout.splitlines()[-1])


def run_alone(code: str, *args: str, env: Mapping[str, str] | None = None) -> list[str]:
    """``code`` run with ``args`` in an environment of its own (the checkout on the path, and
    ``env``; none of this process's variables, which a command run in-process may have
    set): the words it printed. Its stderr must be empty."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **(env or {})},
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def last_json(code: str, *args: str, env: Mapping[str, str] | None = None) -> Any:
    return run_python(code, *args, env=env)[1]


def sample_build(
    out: Path, probe: str, setup: str = "", env: Mapping[str, str] | None = None
) -> tuple[str, Any]:
    """``episodes build`` of the sample into ``out``, then ``probe`` evaluated in the same
    process (after ``setup``): the command's output and the probe's value."""
    args = ["build", "--no-progress", "--out", str(out / "ds"), "--rejects", str(out / "r.jsonl")]
    return run_python(_COMMAND.format(setup=setup, probe=probe), *args, env=env)
