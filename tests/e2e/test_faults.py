"""Faults from outside, each injected on a real target: a small disk that fills, a build
killed outright, a PostgreSQL server stopped while the sessions stream, an object store and
a Hub that go down mid-transfer. For each: the exit code, one line with no traceback, the
previous output byte for byte, nothing left beside it, and the same command run again
completes."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from builder.errors import UNAVAILABLE
from builder.fs import space
from samples.episodes import generate_episodes
from samples.files import write_jsonl
from tests.small_disk import fill, small_disk

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "data/bad/bad_lines.jsonl"
BASE_ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


def episodes(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    # The bad lines' rejects are in every build (a rejects file to keep intact): allowed.
    extra = ["--no-progress", "--max-reject-ratio", "0.5"] if args[0] == "build" else []
    return subprocess.Popen(
        [sys.executable, "-m", "builder", *args, *extra],
        cwd=cwd,
        env={**BASE_ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = episodes(*args, cwd=cwd, env=env)
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The previous build's input and the next one's (other episodes: another output)."""
    root = tmp_path_factory.mktemp("fault-inputs")
    made = {"before": root / "before.jsonl", "after": root / "after.jsonl"}
    write_jsonl(made["before"], generate_episodes(270, 3))
    write_jsonl(made["after"], generate_episodes(300, 4))
    made["large"] = root / "large.jsonl"
    write_jsonl(made["large"], generate_episodes(1500, 17))
    return made


@pytest.fixture(scope="module")
def previous(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build of the previous input, copied wherever a test needs one in place."""
    root = tmp_path_factory.mktemp("fault-previous")
    code, _, err = run(
        "build",
        *("--episodes", str(inputs["before"]), str(BAD)),
        *("--out", str(root / "ds"), "--rejects", str(root / "rejects.jsonl")),
        cwd=root,
    )
    assert code == 0, err
    return root


# ---------------------------------------------------------------------- a disk that fills


@dataclass(frozen=True)
class DiskFault:
    """Which of the build's folders live on a 12 MB disk, and how much of it is left free
    when the next build starts (from the space the finished build is estimated to need)."""

    name: str
    on_disk: tuple[str, ...]  # "out" (its folder and rejects), "rejects", "cache"
    leave: Callable[[int], int]  # the estimate -> bytes left free
    says: str  # the folder named is the disk, or the cache on it: {disk}
    args: tuple[str, ...] = field(default=())


DISK_FAULTS = [
    DiskFault(
        "room for less than the finished build: refused before any work",
        ("out",),
        lambda estimate: estimate // 2,
        "no space left on the device of {disk}: ",
    ),
    DiskFault(
        # The staged tables, the buckets and the dataset beside the previous build need
        # about twice the finished build: room for 1.4 times fills up on the way.
        "room for the finished build only: the disk fills up during the build",
        ("out",),
        lambda estimate: int(estimate * 1.4),
        "the device of {disk} filled up during the build: it needs more than the ",
    ),
    DiskFault(
        "the cache's disk fills up",
        ("cache",),
        lambda estimate: 64 << 10,
        "the device of {disk}/cache filled up during the build",
    ),
    DiskFault(
        "the rejects file's disk is full",
        ("rejects",),
        lambda estimate: 0,
        "the device of {disk} filled up during the build",
    ),
]


@pytest.mark.parametrize("fault", DISK_FAULTS, ids=lambda f: f.name)
def test_a_disk_that_fills(
    fault: DiskFault, inputs: dict[str, Path], previous: Path, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk", 12) as disk:
        home = disk if "out" in fault.on_disk else tmp_path / "local"
        shutil.copytree(previous, home, dirs_exist_ok=True)
        out, rejects = home / "ds", home / "rejects.jsonl"
        if "rejects" in fault.on_disk:
            shutil.copy(previous / "rejects.jsonl", disk / "rejects.jsonl")
            rejects = disk / "rejects.jsonl"
        args = ["--episodes", str(inputs["after"]), str(BAD), "--out", str(out)]
        args += ["--rejects", str(rejects)]
        if "cache" in fault.on_disk:
            args += ["--cache-dir", str(disk / "cache")]
        before, rejects_before = snapshot(out), rejects.read_bytes()
        around = {folder: names(folder) for folder in {out.parent, rejects.parent}}
        estimate = space.final_size(out, inputs["after"].stat().st_size + BAD.stat().st_size)
        filler = fill(disk, fault.leave(estimate))

        started = time.monotonic()
        code, _, err = run("build", *args, cwd=tmp_path)
        took = time.monotonic() - started

        assert code == UNAVAILABLE, err
        line = one_line(err)
        assert fault.says.format(disk=disk) in line, line
        assert line.endswith("— free space there, or choose another folder, and run it again")
        assert snapshot(out) == before and rejects.read_bytes() == rejects_before
        for folder, listed in around.items():
            assert [n for n in names(folder) if n != filler.name] == listed
        if "cache" in fault.on_disk:
            assert not [p for p in (disk / "cache").rglob(".tmp-*")]  # half-written entries
        assert took < 60

        filler.unlink()
        code, _, err = run("build", *args, cwd=tmp_path)
        assert code == 0, err
        assert snapshot(out) != before and err == ""


# ---------------------------------------------------------------------- a build killed outright


@pytest.mark.parametrize("then", ["build", "doctor"])
def test_a_killed_builds_leftovers_go_with_the_next_command(
    then: str, inputs: dict[str, Path], previous: Path, tmp_path: Path
) -> None:
    shutil.copytree(previous, tmp_path, dirs_exist_ok=True)
    out, rejects = tmp_path / "ds", tmp_path / "rejects.jsonl"
    common = ["--out", str(out), "--rejects", str(rejects)]
    before, around = snapshot(out), names(tmp_path)
    build = episodes(
        "build", "--episodes", str(inputs["large"]), "--workers", "1", *common, cwd=tmp_path
    )
    work = tmp_path / ".ds.work"
    deadline = time.monotonic() + 60
    while not (work / "tables").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # well inside the ingest of 1,500 episodes
    build.send_signal(signal.SIGKILL)
    build.communicate(timeout=30)
    assert build.returncode == -signal.SIGKILL
    left = sorted(set(names(tmp_path)) - set(around))
    partial = f".rejects.jsonl.{build.pid}.partial"
    assert left == sorted([".ds.lock", ".ds.work", partial])
    assert snapshot(out) == before

    if then == "doctor":
        code, said, err = run("doctor", str(out), cwd=tmp_path)
        assert code == 0 and err == ""
        first = said.splitlines()[0]
        assert first.startswith(f"removed what an interrupted build left: .ds.work, {partial}")
        assert names(tmp_path) == around and snapshot(out) == before
        code, said, _ = run("doctor", str(out), cwd=tmp_path)
        assert code == 0 and said == f"nothing left behind beside {out}\n"
        return
    code, _, err = run("build", "--episodes", str(inputs["after"]), *common, cwd=tmp_path)
    assert code == 0, err
    line = one_line(err)
    assert line.startswith("episodes build: removed what an interrupted build left: .ds.work, ")
    assert partial in line and ".ds.lock" in line and "MB freed)" in line
    assert names(tmp_path) == around
