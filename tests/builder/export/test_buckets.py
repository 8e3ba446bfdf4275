"""Deriving a range of question ids at a time changes memory, never the bytes written."""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from builder.config import load_config
from builder.export import buckets, segment
from builder.pipeline import build

ROOT = Path(__file__).resolve().parents[3]


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_bucket_count_follows_the_input_up_to_the_prefix_range() -> None:
    assert buckets.bucket_count(0) == buckets.bucket_count(10) == 1
    assert buckets.bucket_count(4 * buckets.EPISODES_PER_BUCKET) == 4
    assert buckets.bucket_count(4 * buckets.EPISODES_PER_BUCKET + 1) == 5
    assert buckets.bucket_count(10**12) == buckets.PREFIX_RANGE


@pytest.mark.parametrize("count", [1, 3, 22, 256, 5000, buckets.PREFIX_RANGE])
def test_buckets_are_contiguous_ranges_of_ids(count: int) -> None:
    rng = random.Random(count)
    ids = sorted(f"{rng.getrandbits(64):016x}" for _ in range(5000))
    ids += ["0000000000000000", "ffffffffffffffff"]
    ids.sort()
    index = pl.DataFrame({"question_id": ids}).select(buckets.bucket_index(count)).to_series()
    assert index.min() >= 0 and index.max() < count
    assert index.is_sorted()  # sorted ids, sorted buckets: each bucket one range
    assert index[0] == 0 and index[-1] == count - 1


def test_the_number_of_buckets_does_not_change_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = load_config(ROOT / "dataset.toml")  # episodes, question banks and sessions

    def run(name: str) -> dict[str, str]:
        # the rejects file beside the output under one name: the manifest records where
        folder = tmp_path / name
        config = replace(sample, out=folder / "dataset", rejects=folder / "rejects.jsonl")
        return digest(build(config).out)

    # Small row groups, so groups span bucket boundaries in both builds.
    monkeypatch.setattr(segment, "CONVERSATION_GROUP_ROWS", 16)
    whole = run("whole")
    monkeypatch.setattr(buckets, "EPISODES_PER_BUCKET", 7)  # 22 buckets for 150 episodes
    monkeypatch.setattr(buckets, "SCRATCH_FILE_BYTES", 1 << 16)  # many scratch files
    assert run("bucketed") == whole
    files = (tmp_path / "bucketed" / "dataset" / "sft").glob("train-0000*.parquet")
    sft = max(map(pq.ParquetFile, files), key=lambda f: f.metadata.num_rows)  # the largest
    assert sft.num_row_groups > 2
    assert sft.metadata.row_group(0).num_rows == 16


def test_reading_a_staging_table_holds_a_batch_not_the_file(tmp_path: Path) -> None:
    """The cut reads each staging table a batch (of whole row groups) at a time; what
    Arrow holds meanwhile stays about a batch, however far into the file."""
    import os

    import pyarrow as pa

    path = tmp_path / "turns.parquet"
    groups, rows = 60, 1_000
    with pq.ParquetWriter(path, pa.schema([("code", pa.string())]), compression="zstd") as out:
        for _ in range(groups):  # random text: about 1 MB a group, compressed or not
            text = [os.urandom(512).hex() for _ in range(rows)]
            out.write_table(pa.table({"code": text}), row_group_size=rows)
    size = path.stat().st_size
    before, held = pa.total_allocated_bytes(), 0
    read = 0
    for load in buckets.reads(path, rows):
        frame = load()
        read += frame.height
        held = max(held, pa.total_allocated_bytes() - before)
    assert read == groups * rows
    assert held < size / 4, (held, size)
