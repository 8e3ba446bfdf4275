"""Deriving a range of question ids at a time changes memory, never the bytes written."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builder import export
from builder.build import build
from builder.config import BuildConfig
from builder.export import buckets

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data/episodes/episodes.jsonl"


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_bounds_cover_every_id_once() -> None:
    assert buckets.bucket_bounds(10) == [(None, None)]
    bounds = buckets.bucket_bounds(4 * buckets.EPISODES_PER_BUCKET)
    assert len(bounds) == 4 and bounds[0][0] is None and bounds[-1][1] is None
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))


def test_the_number_of_buckets_does_not_change_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(name: str) -> dict[str, str]:
        config = BuildConfig(
            episodes=(str(SAMPLE),), out=tmp_path / name, rejects=tmp_path / f"{name}.jsonl"
        )
        return digest(build(config).out)

    # Small row groups, so groups span bucket boundaries in both builds.
    monkeypatch.setattr(export, "CONVERSATION_GROUP_ROWS", 16)
    whole = run("whole")
    monkeypatch.setattr(buckets, "EPISODES_PER_BUCKET", 7)  # 22 buckets for 150 episodes
    assert run("bucketed") == whole
    sft = pq.ParquetFile(next((tmp_path / "bucketed" / "sft").glob("train-*.parquet")))
    assert sft.num_row_groups > 2
    assert sft.metadata.row_group(0).num_rows == 16
