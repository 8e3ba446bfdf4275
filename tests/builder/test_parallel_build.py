"""A build with no options uses more than one thread for its Parquet writes, and its output
is byte for byte that of the sample build."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from builder.build import BuildReport, build
from builder.config import load_config
from builder.export import segment, writer
from tests.builder.test_build import ROOT, folder_digest


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
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "r.jsonl"))
    assert len({t for t in threads if t.startswith("config-write")}) >= 2
    assert folder_digest(report.out) == folder_digest(sample_build.out)
