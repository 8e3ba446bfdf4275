"""Atomic builds: a build killed at any moment (SIGKILL) leaves the previous output complete
and loadable; the next successful build leaves no temporary folder behind; one build per
output folder at a time (the second gets ``BuildLocked``, or exit code 4 from the CLI).

The builds run as ``python -m builder build`` subprocesses, from an empty directory (so no
``dataset.toml`` is picked up), on a few thousand generated episodes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import datasets
import pytest

import builder.fs.output as output_module
from builder.config import BuildConfig
from builder.fs.output import BuildLocked, output_lock
from builder.ingest.rejects import RejectsWriter
from builder.pipeline import build
from samples.episodes import generate_episodes
from samples.files import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
EPISODES = 1500
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")}


def folder_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def build_command(source: Path, out: Path, max_reject_ratio: str = "1") -> list[str]:
    return [
        sys.executable,
        "-m",
        "builder",
        "build",
        "--episodes",
        str(source),
        "--out",
        str(out),
        "--rejects",
        str(out.parent / "rejects.jsonl"),
        "--max-reject-ratio",
        max_reject_ratio,
        "--no-progress",
    ]


def start_build(source: Path, out: Path, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        build_command(source, out),
        cwd=cwd,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def run_build(source: Path, out: Path, cwd: Path) -> float:
    started = time.monotonic()
    process = start_build(source, out, cwd)
    _, err = process.communicate(timeout=600)
    assert process.returncode == 0, err.decode()
    return time.monotonic() - started


def assert_loadable(out: Path, cache: Path) -> None:
    for config in ("sft", "turns"):
        ds = datasets.load_dataset(str(out), config, split="train", cache_dir=str(cache))
        assert ds.num_rows > 0


def leftovers(out: Path) -> list[str]:
    """Temporary files and folders of a build beside the output, its lock file included."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith("."))


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("atomic-input") / "episodes.jsonl"
    write_jsonl(path, generate_episodes(EPISODES, seed=4))
    return path


@pytest.mark.slow
def test_sigkill_at_any_point_keeps_the_previous_build(source: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "site" / "dataset"
    seconds = run_build(source, out, cwd)
    previous = folder_digest(out)
    assert_loadable(out, tmp_path / "cache-0")
    # Early (reading), mid-way, and late (writing the configs, swapping) in the build.
    delays = sorted({0.2, 0.5, 1.0, *(seconds * f for f in (0.5, 0.8, 0.95))})
    killed = 0
    for delay in delays:
        process = start_build(source, out, cwd)
        time.sleep(delay)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed += 1
        process.wait(timeout=60)
        # Byte for byte the loadable build from before.
        assert folder_digest(out) == previous, f"killed after {delay:.2f}s"
    assert killed >= 4, "the builds finished before they could be killed"
    assert_loadable(out, tmp_path / "cache-killed")
    run_build(source, out, cwd)
    assert leftovers(out) == []
    assert folder_digest(out) == previous  # same inputs, same bytes
    assert_loadable(out, tmp_path / "cache-final")


KILL_WHEN_MOVED_ASIDE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from builder.cli.episodes import main

    out = Path(sys.argv[1])
    if sys.argv[2] == "no-exchange":  # an OS without an atomic directory exchange
        import builder.fs.output
        builder.fs.output.exchange = lambda a, b: False

    def killing(rename):
        def moved(source, *args, **kwargs):
            result = rename(source, *args, **kwargs)
            if Path(source) == out:  # the previous output was just moved away
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        return moved

    Path.rename = killing(Path.rename)
    Path.replace = killing(Path.replace)
    os.rename = killing(os.rename)
    os.replace = killing(os.replace)
    sys.exit(main(sys.argv[3:]))
    """
)


def kill_inside_swap(tmp_path: Path, exchange: bool) -> tuple[Path, Path, Path, dict[str, str]]:
    """Build once, then build again and die right after the previous output is moved away
    (by any rename). Returns the input, cwd, output and the first build's digest."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "site" / "dataset"
    small = tmp_path / "small.jsonl"
    write_jsonl(small, generate_episodes(50, seed=9))
    run_build(small, out, cwd)
    previous = folder_digest(out)
    script = tmp_path / "kill_when_moved_aside.py"
    script.write_text(KILL_WHEN_MOVED_ASIDE)
    mode = "exchange" if exchange else "no-exchange"
    command = [sys.executable, str(script), str(out), mode, *build_command(small, out)[3:]]
    result = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, check=False)
    assert result.returncode in (0, -signal.SIGKILL), result.stderr.decode()
    if not exchange:
        assert result.returncode == -signal.SIGKILL  # the two-rename swap was hit
    return small, cwd, out, previous


def test_sigkill_inside_the_swap_keeps_the_previous_build(tmp_path: Path) -> None:
    """The moment a timed kill almost never hits. With an atomic exchange (Linux) there is
    no moment without an output folder: the build either completes or was never swapped."""
    small, cwd, out, previous = kill_inside_swap(tmp_path, exchange=True)
    assert out.is_dir(), "killed inside the swap: no output folder at all"
    assert folder_digest(out) == previous
    assert_loadable(out, tmp_path / "cache")
    run_build(small, out, cwd)
    assert leftovers(out) == []


def test_sigkill_between_two_renames_is_repaired_by_the_next_build(tmp_path: Path) -> None:
    """Without an exchange the swap is two renames; killed between them, the previous
    build is complete beside the output, and the next build puts it back before anything."""
    small, cwd, out, previous = kill_inside_swap(tmp_path, exchange=False)
    aside = out.parent / f".{out.name}.old"
    assert not out.exists() and folder_digest(aside) == previous
    # The next build repairs before anything else, even one refused for its input.
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    command = build_command(bad, out, max_reject_ratio="0")
    refused = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True)
    assert refused.returncode == 2, refused.stderr
    assert folder_digest(out) == previous
    assert_loadable(out, tmp_path / "cache")
    run_build(small, out, cwd)
    assert leftovers(out) == []


def test_second_build_into_the_same_output_is_locked(tmp_path: Path) -> None:
    source = tmp_path / "episodes.jsonl"
    write_jsonl(source, generate_episodes(20, seed=2))
    out = tmp_path / "dataset"
    config = replace(
        BuildConfig(), episodes=(str(source),), out=out, rejects=tmp_path / "rejects.jsonl"
    )
    with output_lock(out), pytest.raises(BuildLocked, match=str(out)):
        build(config)
    assert not out.exists()
    assert leftovers(out) == []
    build(config)  # the lock is free again
    assert out.is_dir()


def test_a_lock_file_its_holder_removed_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that opened the lock file just before the holder removed it must not take a
    lock on the removed file: it takes the one now at the path."""
    out = tmp_path / "dataset"
    path = tmp_path / ".dataset.lock"
    with output_lock(out):
        stale = open(path, "a+")  # noqa: SIM115 - opened while the holder had it
    assert not path.exists()  # the holder removed it as it finished
    opened = []

    def open_stale_first(*args: Any, **kwargs: Any) -> Any:
        handle = stale if not opened else open(*args, **kwargs)  # noqa: SIM115 - the lock closes it
        opened.append(handle)
        return handle

    monkeypatch.setattr(output_module, "open", open_stale_first, raising=False)
    with output_lock(out):
        assert len(opened) == 2 and stale.closed  # the stale file was dropped
        assert os.stat(path).st_ino == os.fstat(opened[1].fileno()).st_ino
        assert lock_is_held(out)
    assert not path.exists()


def lock_is_held(out: Path) -> bool:
    path = out.parent / f".{out.name}.lock"
    if not path.exists():
        return False
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_cli_exits_4_while_another_process_builds(source: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "site" / "dataset"
    first = start_build(source, out, cwd)
    try:
        deadline = time.monotonic() + 60
        while not lock_is_held(out):
            assert first.poll() is None, "the first build ended before taking the lock"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        second = subprocess.run(
            build_command(source, out), cwd=cwd, env=ENV, capture_output=True, text=True
        )
        assert second.returncode == 4, second.stderr
        assert "another build" in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    assert not lock_is_held(out)  # a killed build does not keep the lock


def test_two_builds_sharing_a_rejects_file_do_not_share_its_partial_file(
    tmp_path: Path,
) -> None:
    """Each process writes its own partial file: the rejects file ends up the last
    finisher's, whole, and the other finisher fails on nothing."""
    path = tmp_path / "rejects.jsonl"
    ours = RejectsWriter(path)
    theirs = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from builder.ingest.rejects import RejectsWriter;"
            "w = RejectsWriter(Path(sys.argv[1])); w.close()",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert theirs.returncode == 0, theirs.stderr
    ours.close()
    assert path.read_bytes() == b""
    assert [p.name for p in tmp_path.iterdir()] == ["rejects.jsonl"]
