"""Deriving a range of question ids at a time changes memory, never the bytes written."""

from __future__ import annotations

import errno
import hashlib
import random
import threading
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow as pa
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


def test_bucket_count_follows_the_staged_bytes_when_episodes_are_large() -> None:
    size = buckets.BUCKET_BYTES
    assert buckets.bucket_count(10, 4 * size) == 4  # ten large episodes: four buckets
    assert buckets.bucket_count(10, 4 * size + 1) == 5
    assert buckets.bucket_count(10, size // 2) == 1
    # small episodes: their count decides, however few bytes they take
    assert buckets.bucket_count(3 * buckets.EPISODES_PER_BUCKET, size) == 3
    assert buckets.bucket_count(10, 10**15) == buckets.PREFIX_RANGE


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
        table = load()
        read += table.num_rows
        held = max(held, pa.total_allocated_bytes() - before)
    assert read == groups * rows
    assert held < size / 4, (held, size)


@pytest.mark.parametrize("in_order", [False, True])
def test_a_batch_is_cut_into_its_buckets_rows_in_input_order(in_order: bool) -> None:
    """``_cut`` gathers a batch into bucket order in Arrow (no gather when the batch is in
    order already): each piece holds its bucket's rows in input order."""
    import pyarrow as pa

    rng = random.Random(7)
    ids = [f"{rng.getrandbits(64):016x}" for _ in range(300)]
    ids = sorted(ids) if in_order else ids
    questions = pa.table({"question_id": ids, "text": [f"q{i}" * (i % 5) for i in range(300)]})
    episodes = pa.table(
        {"episode_id": [f"e{i}" for i in range(300)], "question_id": ids},
    )
    count = 6
    episode_bucket = pl.from_arrow(episodes).select(  # type: ignore[union-attr]
        "episode_id", _bucket=buckets.bucket_index(count)
    )
    children = pa.table({"episode_id": [f"e{rng.randrange(300)}" for _ in range(500)]})
    for table in (questions, children):
        pieces = buckets._cut(table.schema, count, episode_bucket, lambda t=table: t)
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        if "question_id" in frame.columns:
            keyed = frame.with_columns(_bucket=buckets.bucket_index(count))
        else:
            keyed = frame.join(episode_bucket, on="episode_id", how="left", maintain_order="left")
        expected = [
            (k, keyed.filter(pl.col("_bucket") == k).drop("_bucket"))
            for k in sorted(keyed.get_column("_bucket").unique())
        ]
        assert [k for k, _ in pieces] == [k for k, _ in expected]
        for (_, got), (_, rows) in zip(pieces, expected, strict=True):
            assert got.equals(rows.to_arrow().cast(table.schema))


def _question_batches(batches: int, rows: int) -> list[pa.Table]:
    rng = random.Random(batches)
    return [
        pa.table(
            {
                "question_id": [f"{rng.getrandbits(64):016x}" for _ in range(rows)],
                "text": [f"batch {b} row {r}" for r in range(rows)],
            }
        )
        for b in range(batches)
    ]


def test_scratch_files_written_beside_the_cut_keep_each_buckets_rows_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scratch files are written on a thread of their own while the cut goes on: every
    bucket still reads its rows in input order, from its files in the order written."""
    monkeypatch.setattr(buckets, "SCRATCH_FILE_BYTES", 1)  # a file per batch
    batches = _question_batches(12, 200)
    schema = batches[0].schema
    out = [buckets.Bucket({"questions": schema}) for _ in range(5)]
    buckets._cut_table(out, "questions", [lambda t=t: t for t in batches], tmp_path)
    whole = pl.from_arrow(pa.concat_tables(batches))
    assert isinstance(whole, pl.DataFrame)
    keyed = whole.with_columns(_bucket=buckets.bucket_index(len(out)))
    for k, bucket in enumerate(out):
        files = [path for path, _ in bucket.pieces["questions"]]
        assert files == sorted(files) and len(files) > 1
        expected = keyed.filter(pl.col("_bucket") == k).drop("_bucket")
        assert bucket.read("questions").equals(expected)
    assert not [t for t in threading.enumerate() if t.name.startswith("scratch-write")]


def test_a_scratch_file_that_cannot_be_written_stops_the_cut_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write on the scratch thread that fails (a full disk) is raised by the cut, and
    the thread is gone."""
    monkeypatch.setattr(buckets, "SCRATCH_FILE_BYTES", 1)
    written: list[Path] = []
    new_file = pa.ipc.new_file

    def full_at_the_second(path: Path, *args: object, **kwargs: object) -> object:
        written.append(path)
        if len(written) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return new_file(path, *args, **kwargs)

    monkeypatch.setattr(buckets.pa.ipc, "new_file", full_at_the_second)
    batches = _question_batches(6, 50)
    out = [buckets.Bucket({"questions": batches[0].schema}) for _ in range(3)]
    with pytest.raises(OSError) as raised:
        buckets._cut_table(out, "questions", [lambda t=t: t for t in batches], tmp_path)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(written[1])
    assert len(written) == 2  # nothing written after the failure
    assert not [t for t in threading.enumerate() if t.name.startswith("scratch-write")]
