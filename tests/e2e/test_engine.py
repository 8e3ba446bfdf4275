"""Parallel ingest: the same bytes as the one-process ingest, for any number of workers.

Batches are normalized without build-wide state (possibly in other processes) and committed
in input order, so duplicates, first-source-wins questions, ground truth learned from
earlier lines and ``--strict`` rejects come out exactly as a line-at-a-time ingest decides.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import builder.pipeline as build_module
from builder.config import BuildConfig
from builder.engine import InlineEngine, LocalEngine, PerRunEngine
from builder.ingest.files import ingest_files
from builder.ingest.rejects import RejectsWriter
from builder.pipeline import build
from samples.episodes import generate_episodes
from samples.files import write_jsonl
from samples.questions import generate_questions
from samples.variants import with_defects
from schemas.stages import Ingested
from schemas.tables import TABLES


def tricky_input(folder: Path) -> BuildConfig:
    """Episodes with duplicates, a bad line, a blank, a check failure and banks."""
    records = with_defects(generate_episodes(50, seed=3, question_pool=12))
    episodes = folder / "episodes.jsonl"
    write_jsonl(episodes, records)
    second = folder / "more.jsonl"
    write_jsonl(second, generate_episodes(20, seed=4, question_pool=12))
    bank = folder / "bank.jsonl"
    write_jsonl(bank, generate_questions(6, seed=3))
    return BuildConfig(
        episodes=(str(episodes), str(second)),
        synthetic_questions=(str(bank),),
        max_reject_ratio=1.0,
        batch_lines=7,  # many batches, so order across batches matters
    )


def ingest(config: BuildConfig, folder: Path, workers: int) -> tuple[dict[str, bytes], Ingested]:
    rejects = RejectsWriter(folder / "rejects.jsonl")
    try:
        ingested = ingest_files(config, folder / "staging", rejects, workers=workers)
    finally:
        rejects.close()
    staging = folder / "staging"
    files = {str(p.relative_to(staging)): p.read_bytes() for p in staging.rglob("*.parquet")}
    assert len(files) == len(TABLES) * 2  # the bank segment, and one run of both small files
    files["rejects"] = (folder / "rejects.jsonl").read_bytes()
    return files, ingested


@pytest.mark.parametrize("strict", [False, True])
def test_two_workers_write_the_same_bytes_as_one(tmp_path: Path, strict: bool) -> None:
    config = tricky_input(tmp_path)
    config = BuildConfig(**{**config.__dict__, "strict": strict})
    one, one_summary = ingest(config, tmp_path / "one", workers=1)
    two, two_summary = ingest(config, tmp_path / "two", workers=2)
    assert one == two
    assert one_summary == two_summary
    assert one_summary.rejected >= 2 + strict


def test_full_build_is_identical_with_two_workers(tmp_path: Path, monkeypatch: Any) -> None:
    config = tricky_input(tmp_path)

    def run(name: str, workers: int) -> dict[str, bytes]:
        monkeypatch.setattr(
            build_module, "ingest_files", functools.partial(ingest_files, workers=workers)
        )
        out = tmp_path / name / "dataset"
        build(
            BuildConfig(**{**config.__dict__, "out": out, "rejects": tmp_path / name / "r.jsonl"})
        )
        return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    assert run("one", 1) == run("two", 2)


def test_by_default_a_large_file_gets_one_worker_per_core(tmp_path: Path, monkeypatch: Any) -> None:
    """No ``--workers``: files under ``POOL_FROM_BYTES`` are normalized in this process, a
    file of that size or more starts a pool of one worker per core, which then serves the
    files after it; the build writes the same bytes either way."""
    from builder.ingest import files as ingest_module

    config = tricky_input(tmp_path)
    first, second = (Path(p).stat().st_size for p in config.episodes)
    assert max(first, second) < ingest_module.POOL_FROM_BYTES  # the sample size: no pool
    monkeypatch.setattr(ingest_module, "default_workers", lambda: 2)  # any machine: 2 cores

    started: list[int] = []
    original = LocalEngine.__init__

    def recorded(self: LocalEngine, workers: int, spool_in: Path | None = None) -> None:
        started.append(workers)
        original(self, workers, spool_in)

    monkeypatch.setattr(LocalEngine, "__init__", recorded)

    def run(name: str) -> dict[str, bytes]:
        out = tmp_path / name / "dataset"
        build(
            BuildConfig(**{**config.__dict__, "out": out, "rejects": tmp_path / name / "r.jsonl"})
        )
        return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    small = run("small")
    assert started == []
    monkeypatch.setattr(ingest_module, "POOL_FROM_BYTES", first)  # the first file is large
    assert run("large") == small
    assert started == [2]  # one pool, for both files
    started.clear()
    explicit = BuildConfig(**{**config.__dict__, "workers": 1})
    assert isinstance(ingest_module._engine(explicit, None), InlineEngine)


def test_a_pool_starts_for_a_run_of_its_threshold(tmp_path: Path) -> None:
    """A small run (what an incremental rebuild normalizes) starts no pool; a run of its
    threshold does, one large file or small files together, and the pool then serves every
    later run."""
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_bytes(b"x" * 10)
    large.write_bytes(b"x" * 100)
    engine = PerRunEngine(2, from_bytes=50)
    try:
        assert isinstance(engine.for_files([str(small)]), InlineEngine)
        assert isinstance(engine.for_files(["s3://bucket/remote.jsonl"]), InlineEngine)
        assert isinstance(engine.for_files([str(small)] * 4), InlineEngine)  # 40 bytes
        pool = engine.for_files([str(large)])
        assert isinstance(pool, LocalEngine) and pool.workers == 2
        assert engine.for_files([str(small)]) is pool  # started: it serves what follows
    finally:
        engine.close()
    engine = PerRunEngine(2, from_bytes=50)
    try:
        assert isinstance(engine.for_files([str(small)] * 5), LocalEngine)
    finally:
        engine.close()


def test_small_runs_start_the_pool_when_the_input_is_large(tmp_path: Path) -> None:
    """Many small files are many small runs: the pool starts when what is left to read
    (this run and those after it) reaches the threshold, not only when one run does (50
    files of 6 MB were all normalized in the build's own process)."""
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"x" * 10)
    engine = PerRunEngine(2, from_bytes=50)
    try:
        assert isinstance(engine.for_files([str(small)], ahead=39), InlineEngine)
        assert isinstance(engine.for_files([str(small)], ahead=40), LocalEngine)
    finally:
        engine.close()


def test_a_small_run_is_cut_into_a_batch_or_two_per_worker(tmp_path: Path) -> None:
    from builder.engine import MIN_BATCH_BYTES, batch_bytes

    run = tmp_path / "run.jsonl"
    run.write_bytes(b"x" * (12 * MIN_BATCH_BYTES))
    most = 16 * MIN_BATCH_BYTES
    assert batch_bytes([str(run)], 2, most) == 3 * MIN_BATCH_BYTES  # 4 batches, 2 workers
    assert batch_bytes([str(run)], 1, most) == most  # one process: no need to cut
    assert batch_bytes([str(run)] * 8, 2, most) == most  # large enough as it is
    assert batch_bytes([str(run)], 64, most) == MIN_BATCH_BYTES  # never smaller than this
    assert batch_bytes(["s3://bucket/remote.jsonl"], 2, most) == most  # size unknown


def test_a_run_of_small_files_keeps_both_workers_busy_and_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The two files of ``tricky_input`` as one run on two workers: cut into four batches
    (the minimum batch lowered to fit the sample), where one batch of the usual size held
    the whole run; the dataset is the one-process build's, byte for byte (which cuts no
    batch but at ``batch_lines``)."""
    import builder.engine as engine_module

    config = tricky_input(tmp_path)
    size = sum(Path(p).stat().st_size for p in config.episodes)
    monkeypatch.setattr(engine_module, "MIN_BATCH_BYTES", 1)
    batches: list[int] = []
    original = LocalEngine.map

    def counted(self: LocalEngine, fn: Any, items: Any) -> Any:
        def each() -> Any:
            for item in items:
                batches.append(sum(len(line.raw) for line in item[0]))
                yield item

        return original(self, fn, each())

    monkeypatch.setattr(LocalEngine, "map", counted)

    def run(name: str, workers: int) -> dict[str, bytes]:
        out = tmp_path / name / "dataset"
        changed = {"out": out, "rejects": tmp_path / name / "r.jsonl", "workers": workers}
        changed["batch_lines"] = 10_000  # batches cut by their bytes alone
        build(BuildConfig(**{**config.__dict__, **changed}))
        return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    assert run("two", 2) == run("one", 1)
    longest = max(len(line) for p in config.episodes for line in Path(p).read_bytes().split(b"\n"))
    assert len(batches) >= 4  # a batch closes at the line that brings it to a quarter
    assert max(batches) < -(-size // 4) + longest


def test_a_pool_leaves_no_fork_server_behind(tmp_path: Path) -> None:
    """Closing the engine stops and reaps its fork server: no process outlives the ingest
    (and the workers' CPU time counts as this process's children)."""
    import multiprocessing
    from multiprocessing import forkserver

    config = tricky_input(tmp_path)
    ingest(config, tmp_path / "two", workers=2)
    assert forkserver._forkserver._forkserver_pid is None
    assert multiprocessing.active_children() == []


def test_the_command_starts_the_workers_server_ahead_only_for_a_pool(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """``episodes build`` starts the fork server before importing the build when the
    ingest will use a pool (a large file, no ``--workers``, more than one core); a
    server no file needed is stopped with the ingest's engine."""
    from multiprocessing import forkserver

    import builder.engine as engine_module
    from builder.cli.ingest_workers import start_ingest_workers

    config = tricky_input(tmp_path)
    monkeypatch.setattr(engine_module, "default_workers", lambda: 2)
    start_ingest_workers(config)  # the sample's files are small: nothing started
    assert forkserver._forkserver._forkserver_pid is None
    start_ingest_workers(BuildConfig(**{**config.__dict__, "workers": 1}))
    monkeypatch.setattr(engine_module, "POOL_FROM_BYTES", 1)
    start_ingest_workers(BuildConfig(**{**config.__dict__, "workers": 1}))  # in-process asked
    assert forkserver._forkserver._forkserver_pid is None
    (tmp_path / "cache").mkdir()  # a rebuild with its cache: a pool starts only if needed
    start_ingest_workers(BuildConfig(**{**config.__dict__, "cache_dir": tmp_path / "cache"}))
    assert forkserver._forkserver._forkserver_pid is None
    start_ingest_workers(config)
    try:
        assert forkserver._forkserver._forkserver_pid is not None
    finally:
        PerRunEngine(2, from_bytes=1 << 40).close()  # no file large enough: no pool
    assert forkserver._forkserver._forkserver_pid is None


INTERRUPTED_SERVER = """
import os, signal, time
from multiprocessing import forkserver
from builder.engine import LocalEngine, start_fork_server

start_fork_server()
server = forkserver._forkserver._forkserver_pid
time.sleep(0.3)  # the server is importing the ingest
os.kill(server, signal.SIGINT)  # Ctrl-C reaches the whole process group, the server too
engine = LocalEngine(1)
print(list(engine.map(pow, [(2, 5)])), forkserver._forkserver._forkserver_pid == server)
engine.close()
"""


def test_ctrl_c_while_the_fork_server_imports_leaves_it_silent_and_running() -> None:
    """Ctrl-C reaches the fork server as well, possibly while it still imports the ingest:
    it must neither print a ``KeyboardInterrupt`` traceback beside the build's one line nor
    die (the build reports the interrupt; a later pool would start a new server)."""
    import subprocess
    import sys

    child = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_SERVER], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["[32]", "True"]
    assert "Traceback" not in child.stderr and "KeyboardInterrupt" not in child.stderr


def test_a_ctrl_c_during_a_submit_is_acted_on_after_it() -> None:
    """A pool's ``submit`` forks a worker and then records it; interrupted in between, the
    pool would not know the worker, shutdown would not stop it, and the build would wait for
    its fork server for ever. Inside ``interrupts_deferred`` the interrupt waits for the end
    of the block, and goes to the handler there was before (here: ignored, so nothing)."""
    import signal

    from builder.engine.interrupts import interrupts_deferred

    reached = []
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        reached.append("after the signal")
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    # SIGTERM, which the command turns into an exception as well
    terminated = []
    previous = signal.signal(signal.SIGTERM, lambda *_: terminated.append("handled"))
    try:
        with interrupts_deferred():
            signal.raise_signal(signal.SIGTERM)
            assert terminated == []
        assert terminated == ["handled"]
    finally:
        signal.signal(signal.SIGTERM, previous)


SCRIPT = """
import sys
print("top level ran", flush=True)
from builder.ingest import files as ingest
from builder.pipeline import build
from builder.config import BuildConfig
from pathlib import Path

ingest.POOL_FROM_BYTES = 1  # every file counts as large
ingest.default_workers = lambda: 2
{call}
"""
CALL = (
    "build(BuildConfig(episodes=(sys.argv[1],), out=Path(sys.argv[2]), "
    "rejects=Path(sys.argv[3]), max_reject_ratio=1.0))"
)


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_that_calls_build_at_its_top_level_is_not_run_again(
    tmp_path: Path, guarded: bool
) -> None:
    """Workers import the main script again. By default a script without the
    ``if __name__ == "__main__"`` guard gets the in-process ingest, so its top level runs
    once; a guarded script gets the pool (its unguarded lines run again in each worker)."""
    import subprocess
    import sys

    config = tricky_input(tmp_path)
    call = f'if __name__ == "__main__":\n    {CALL}' if guarded else CALL
    script = tmp_path / "script.py"
    script.write_text(SCRIPT.format(call=call))
    root = Path(__file__).resolve().parents[2]
    out, rejects = tmp_path / "ds", tmp_path / "r.jsonl"
    done = subprocess.run(
        [sys.executable, str(script), config.episodes[0], str(out), str(rejects)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (out / "manifest.json").is_file()
    runs = done.stdout.count("top level ran")
    # Guarded: the pool's workers (started as work arrives) each ran the top level too.
    assert runs >= 2 if guarded else runs == 1
