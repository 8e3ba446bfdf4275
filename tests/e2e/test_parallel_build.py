"""A build with no options uses more than one thread for its Parquet writes and for closing
its configs' files, for cutting the staging tables into buckets, for deriving a bucket while
the one before is written, for cutting a segment while the one before is derived and
for the card's YAML beside its images, and its output is byte
for byte that of the sample build."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from builder import export
from builder.config import load_config
from builder.engine import ThreadEngine
from builder.export import buckets, segment, writer
from builder.pipeline import BuildReport, build, segments
from builder.report import card_images
from tests.e2e.test_build import ROOT, folder_digest


def test_default_build_writes_configs_on_several_threads_at_once(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first writes of sft and rl (the first two configs, handed out together) must be
    # in flight at once: each waits for the other at the barrier, which breaks (failing the
    # build) if one thread did all the writing.
    barrier = threading.Barrier(2, timeout=60)
    threads: set[str] = set()
    write = writer.ConfigWriter.write

    first, lock = {"sft", "rl"}, threading.Lock()

    def meeting(self: writer.ConfigWriter, collected: pl.DataFrame) -> None:
        name = threading.current_thread().name
        threads.add(name)
        with lock:
            meet = self.name in first
            first.discard(self.name)
        if meet:
            barrier.wait()
        write(self, collected)

    monkeypatch.setattr(writer.ConfigWriter, "write", meeting)
    assert segment.write_threads() >= 2
    config = load_config(ROOT / "dataset.toml")
    # the rejects file where the sample build's is, relative to the output: the manifest says
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"))
    assert len({t for t in threads if t.startswith("config-write")}) >= 2
    assert folder_digest(report.out) == folder_digest(sample_build.out)


def test_default_build_derives_a_bucket_while_the_one_before_is_written_and_cuts_on_threads(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small buckets, so the sample's episodes make several: the episode segment's second
    # bucket must be derived while its first is written (each waits for the other at the
    # barrier, which breaks, failing the build, if the two ran one after the other), one
    # bucket at a time on one derive thread; and the partition's batches are cut by a pool
    # of threads (``ThreadEngine``, which runs two at once: see below; whether a busy
    # machine hands a second thread a batch is chance). The files do not depend on the
    # bucket count.
    monkeypatch.setattr(buckets, "EPISODES_PER_BUCKET", 5)
    monkeypatch.setattr(buckets, "PARTITION_BATCH_ROWS", 20)
    barrier = threading.Barrier(2, timeout=60)
    derive_threads: set[str] = set()
    deriving: list[int] = []  # how many buckets were being derived as each one started
    derived, written, lock = [], [], threading.Lock()
    finished: list[buckets.Bucket] = []  # buckets whose derive returned
    bucket, write_all = segment.SegmentExporter._bucket, segment.SegmentExporter._write_all

    def deriving_meeting(
        self: segment.SegmentExporter, part: buckets.Bucket, redact: object
    ) -> object:
        derive_threads.add(threading.current_thread().name)
        with lock:
            derived.append(part)
            second = len(derived) == 2
            deriving.append(len(derived) - len(finished))
        if second:
            barrier.wait()
        try:
            return bucket(self, part, redact)  # type: ignore[arg-type]
        finally:
            with lock:
                finished.append(part)

    def writing_meeting(self: segment.SegmentExporter, *args: Any) -> None:
        with lock:
            written.append(args)
            first = len(written) == 1
        if first:
            barrier.wait()
        write_all(self, *args)

    engines: list[int] = []

    def partition_engine(workers: int, *args: object, **kwargs: object) -> ThreadEngine:
        engines.append(workers)
        return ThreadEngine(workers, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(segment.SegmentExporter, "_bucket", deriving_meeting)
    monkeypatch.setattr(segment.SegmentExporter, "_write_all", writing_meeting)
    monkeypatch.setattr(buckets, "ThreadEngine", partition_engine)
    config = load_config(ROOT / "dataset.toml")
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"))
    assert len(derived) > 2
    assert max(deriving) == 1  # one bucket at a time
    assert len({t for t in derive_threads if t.startswith("derive")}) == 1
    assert engines and min(engines) >= 2  # the cut runs on a pool of two threads or more
    assert folder_digest(report.out) == folder_digest(sample_build.out)


def test_a_segment_closes_its_configs_on_several_threads_at_once(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closing a config writes its last row groups and footers and hashes its files. The
    # episode segment's sft and rl (its first two configs, handed out together) must be
    # closing at once: each waits for the other at the barrier, which breaks (failing the
    # build) if one thread closed both. The manifest still lists them in config order.
    barrier = threading.Barrier(2, timeout=60)
    threads: dict[str, str] = {}
    close = writer.ConfigWriter.close

    def meeting(self: writer.ConfigWriter) -> dict[str, int]:
        if self.name in ("sft", "rl") and self.segment != segment.SESSION_SEGMENT:
            threads[self.name] = threading.current_thread().name
            barrier.wait()
        return close(self)

    monkeypatch.setattr(writer.ConfigWriter, "close", meeting)
    config = load_config(ROOT / "dataset.toml")
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"))
    assert threads["sft"] != threads["rl"], threads
    assert all(name.startswith("config-write") for name in threads.values()), threads
    assert folder_digest(report.out) == folder_digest(sample_build.out)


def test_the_card_yaml_is_made_while_the_card_images_are_drawn(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each waits for the other at the barrier, which breaks (failing the build) if the
    # YAML were made only after the images were written, or before they were started.
    barrier = threading.Barrier(2, timeout=60)
    yaml, images = export.card_yaml, card_images.write_card_images

    def yaml_meeting(*args: Any, **kwargs: Any) -> str:
        barrier.wait()
        return yaml(*args, **kwargs)

    def images_meeting(*args: Any, **kwargs: Any) -> dict[str, str]:
        barrier.wait()
        return images(*args, **kwargs)

    monkeypatch.setattr(export, "card_yaml", yaml_meeting)
    monkeypatch.setattr(card_images, "write_card_images", images_meeting)
    config = load_config(ROOT / "dataset.toml")
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"))
    assert folder_digest(report.out) == folder_digest(sample_build.out)


def test_a_segment_is_cut_while_the_one_before_is_derived(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sample is two segments: the question banks' (00000) and the episodes' (00001).
    # The episodes' cut and the banks' first derive each wait for the other at the barrier,
    # which breaks (failing the build) if the cut waited for the derive to end.
    barrier = threading.Barrier(2, timeout=60)
    cut, derive = segments.partition, segment.SegmentExporter._bucket
    derived: list[int] = []

    def cut_meeting(tables: Path, *args: Any) -> list[buckets.Bucket]:
        if tables.name == "00001":
            barrier.wait()
        return cut(tables, *args)

    def derive_meeting(self: segment.SegmentExporter, *args: Any) -> Any:
        derived.append(1)
        if len(derived) == 1:  # the banks' one bucket
            barrier.wait()
        return derive(self, *args)

    monkeypatch.setattr(segments, "partition", cut_meeting)
    monkeypatch.setattr(segment.SegmentExporter, "_bucket", derive_meeting)
    config = load_config(ROOT / "dataset.toml")
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"))
    assert folder_digest(report.out) == folder_digest(sample_build.out)


def test_thread_engine_runs_two_items_at_once() -> None:
    barrier = threading.Barrier(2, timeout=60)  # broken, failing the test, on one thread

    def work(i: int) -> str:
        if i < 2:
            barrier.wait()
        return threading.current_thread().name

    engine = ThreadEngine(2, name="partition")
    try:
        names = list(engine.map(work, ((i,) for i in range(6))))
    finally:
        engine.close()
    assert len(set(names[:2])) == 2


def test_thread_engine_keeps_item_order_and_bounds_what_is_in_flight() -> None:
    started: list[int] = []
    taken: list[int] = []
    engine = ThreadEngine(2, ahead=1)

    def items():  # type: ignore[no-untyped-def]
        for i in range(20):
            # Before item i is handed out, every item up to i - 2 has been taken.
            assert all(k in taken for k in range(i - 1))
            yield (i,)

    def work(i: int) -> int:
        started.append(i)
        return i * i

    try:
        for result in engine.map(work, items()):
            taken.append(int(result**0.5))
    finally:
        engine.close()
    assert taken == list(range(20))
    assert sorted(started) == list(range(20))
