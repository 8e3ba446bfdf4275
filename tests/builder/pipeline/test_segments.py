"""The segment loop (``builder.pipeline.segments``): a segment's staging tables, read for the
last time once they are cut into buckets, looked up and searched for secrets, are removed
before it is derived, so they never sit beside its buckets and its dataset files; the
segments after it still have theirs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from builder.config import load_config
from builder.export import segment
from builder.ingest.staging import segment_name
from builder.pipeline import BuildReport, build, segments
from tests.e2e.test_build import ROOT


def test_a_segments_staging_tables_are_gone_before_it_is_derived(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    works: list[Path] = []
    cut = segments._cut_segment

    def cutting(work: Path, name: str) -> Any:
        works.append(work)
        return cut(work, name)

    staged_at_export: dict[str, list[str]] = {}
    export = segment.SegmentExporter.export

    def exporting(self: segment.SegmentExporter, name: str, *args: Any) -> Any:
        tables = works[0] / "tables"
        staged_at_export[name] = sorted(p.name for p in tables.iterdir())
        return export(self, name, *args)

    monkeypatch.setattr(segments, "_cut_segment", cutting)
    monkeypatch.setattr(segment.SegmentExporter, "export", exporting)
    config = load_config(ROOT / "dataset.toml")
    # a segment per episode file: the banks' segment and three of episodes
    config = replace(
        config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl", segment_bytes=1
    )
    report = build(config)
    names = [segment_name(i) for i in range(4)]
    assert list(staged_at_export) == names
    for i, name in enumerate(names):
        assert staged_at_export[name] == names[i + 1 :]  # its own gone, the later ones there
    # the rows are the sample build's, cut otherwise
    for table in ("episodes", "turns"):
        mine, sample = (
            pl.read_parquet(out / table / "*.parquet").sort(pl.all())
            for out in (report.out, sample_build.out)
        )
        assert mine.drop("source_file", strict=False).equals(
            sample.drop("source_file", strict=False)
        )
