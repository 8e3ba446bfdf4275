"""A segment's exporter (``builder.export.segment``): a bucket's pieces are handed to the
writer threads largest first, so a large piece handed out last does not leave the other
threads idle at the bucket's end, and the files stay those of the sample build."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from builder.config import load_config
from builder.export import segment, writer
from builder.pipeline import BuildReport, build
from tests.e2e.test_build import ROOT, folder_digest


def test_a_buckets_pieces_are_written_largest_first(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One writer thread: the pieces are written in the order they were handed out.
    monkeypatch.setattr(segment, "write_threads", lambda: 1)
    handed: list[list[tuple[str, int]]] = []  # per bucket: (config, piece size) in order
    write_all, write = segment.SegmentExporter._write_all, writer.ConfigWriter.write

    def writing_all(self: segment.SegmentExporter, *args: object) -> None:
        handed.append([])
        write_all(self, *args)  # type: ignore[arg-type]

    def recording(self: writer.ConfigWriter, piece: pl.DataFrame) -> None:
        if threading.current_thread().name.startswith("config-write"):
            handed[-1].append((self.name, int(piece.estimated_size())))
        write(self, piece)

    monkeypatch.setattr(segment.SegmentExporter, "_write_all", writing_all)
    monkeypatch.setattr(writer.ConfigWriter, "write", recording)
    config = load_config(ROOT / "dataset.toml")
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"))
    buckets = [bucket for bucket in handed if len(bucket) > 1]
    assert buckets
    for bucket in buckets:
        sizes = [size for _, size in bucket]
        assert sizes == sorted(sizes, reverse=True), bucket
    order = list(segment._layouts())
    in_config_order = [sorted(b, key=lambda item: order.index(item[0])) == b for b in buckets]
    assert not all(in_config_order)  # the sizes decided the order, not the configs'
    assert folder_digest(report.out) == folder_digest(sample_build.out)
