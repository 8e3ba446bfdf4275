"""Ctrl-C (SIGINT) or SIGTERM in the middle of a build: one line, exit 130 / 143, the previous
build untouched and no work files left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samples.episodes import generate_episodes
from samples.files import write_jsonl

ROOT = Path(__file__).resolve().parents[2]


def episodes_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "builder", "build", "--no-progress", *args]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def large_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("interrupt") / "episodes.jsonl"
    write_jsonl(path, generate_episodes(1500, 17))
    return path


@pytest.mark.parametrize(
    ("sig", "code", "workers"),
    [
        (signal.SIGINT, 130, "1"),
        (signal.SIGTERM, 143, "1"),
        # A pool: the signal reaches the whole process group, workers included, as Ctrl-C
        # in a terminal does.
        (signal.SIGINT, 130, "2"),
        (signal.SIGTERM, 143, "2"),
    ],
)
def test_an_interrupted_build_leaves_the_previous_one(
    tmp_path: Path, large_input: Path, sig: signal.Signals, code: int, workers: str
) -> None:
    out, rejects = tmp_path / "dataset", tmp_path / "rejects.jsonl"
    common = ("--out", str(out), "--rejects", str(rejects))
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    first = subprocess.run(
        episodes_cmd("--episodes", str(ROOT / "data/episodes/episodes.jsonl"), *common),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    before, rejects_before = snapshot(out), rejects.read_bytes()
    around = sorted(p.name for p in tmp_path.iterdir())
    process = subprocess.Popen(
        episodes_cmd("--episodes", str(large_input), "--workers", workers, *common),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, which the signal is sent to
    )
    work = tmp_path / ".dataset.work"
    deadline = time.monotonic() + 60
    while not work.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert work.exists(), "the build never started"
    time.sleep(0.5)  # well inside the ingest of 1,500 episodes
    os.killpg(process.pid, sig)
    _, err = process.communicate(timeout=120)
    assert process.returncode == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "run it again" in lines[0]
    assert snapshot(out) == before  # the previous build, byte for byte
    assert rejects.read_bytes() == rejects_before  # and its rejects file
    assert not work.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == around
    assert not any(name.startswith(".") for name in around)  # no lock file either
    # No worker or fork server of the build is left running (an exited process that the
    # system has not reaped yet, state Z, is not running). A worker the signal reached may
    # still be exiting when the build has: it gets a few seconds on a busy machine.
    deadline = time.monotonic() + 10
    while (running := _running_in_group(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running == []


def _running_in_group(pgid: int) -> list[list[str]]:
    table = subprocess.run(["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True)
    group = [line.split(None, 2) for line in table.stdout.splitlines()]
    return [g for g in group if g[0] == str(pgid) and not g[1].startswith("Z")]
