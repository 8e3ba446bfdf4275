"""The one Parquet writer: fixed row groups, files that depend only on their rows, and
pending pieces that hold only their own bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builder.fs.parquet import ShardedWriter, compact

SCHEMA = pa.schema([("id", pa.int64()), ("text", pa.string())])


def rows(n: int) -> pa.Table:
    return pa.table({"id": range(n), "text": [f"row {i} " * (i % 7) for i in range(n)]}, SCHEMA)


def write(directory: Path, table: pa.Table, piece: int, group_rows: int, max_rows: int) -> list:
    writer = ShardedWriter(directory, "train", SCHEMA, max_rows, group_rows)
    for start in range(0, table.num_rows, piece):
        writer.write(table.slice(start, piece))
    return writer.close()


def test_files_are_the_same_bytes_whatever_the_pieces(tmp_path: Path) -> None:
    table = rows(1_000)
    digests = []
    for piece in (1, 33, 250, 1_000):
        paths = write(tmp_path / str(piece), table, piece, group_rows=64, max_rows=400)
        digests.append([hashlib.sha256(p.read_bytes()).hexdigest() for p in paths])
    assert all(d == digests[0] for d in digests)
    assert len(digests[0]) == 3  # 400 + 400 + 200 rows


def test_row_groups_have_the_fixed_size_and_files_the_row_limit(tmp_path: Path) -> None:
    paths = write(tmp_path, rows(1_000), piece=97, group_rows=64, max_rows=400)
    # the name ends in the start of the file's sha256
    expected = [
        f"train-{i:05d}-of-00003-{hashlib.sha256(p.read_bytes()).hexdigest()[:16]}.parquet"
        for i, p in enumerate(paths)
    ]
    assert [p.name for p in paths] == expected
    groups = [
        [f.metadata.row_group(g).num_rows for g in range(f.num_row_groups)]
        for f in map(pq.ParquetFile, paths)
    ]
    assert groups == [[64] * 6 + [16], [64] * 6 + [16], [64] * 3 + [8]]
    assert pq.read_table(paths[0]).column("id").to_pylist() == list(range(400))


def test_a_piece_cut_from_a_larger_table_is_compacted() -> None:
    big = rows(20_000)
    cut = big.slice(100, 10)
    assert cut.get_total_buffer_size() > 100 * cut.nbytes  # what compact() is for
    kept = compact(cut)
    assert kept.equals(cut)
    assert kept.get_total_buffer_size() <= 2 * kept.nbytes
    small = rows(10)
    assert compact(small) is small  # nothing to gain: no copy


def test_pending_rows_hold_only_their_own_bytes(tmp_path: Path) -> None:
    big = rows(50_000)
    writer = ShardedWriter(tmp_path, "test", SCHEMA, 10_000, group_rows=1_000)
    pieces = [big.slice(start, 20) for start in range(0, 50_000, 5_000)]  # 200 rows
    assert sum(p.get_total_buffer_size() for p in pieces) > 100 * sum(p.nbytes for p in pieces)
    for piece in pieces:
        writer.write(piece)
    held = sum(t.get_total_buffer_size() for t in writer._pending)
    logical = sum(t.nbytes for t in writer._pending)
    assert writer._pending_rows == 200 and held <= 2 * logical
    writer.close()
    assert writer.rows == 200


def test_a_smaller_split_gets_row_groups_in_proportion() -> None:
    """Each split's unfinished row group waits in memory: sized by the split's share, a 5 %
    split's rows wait about as long as train's, not most of the build."""
    from builder.derive.splits import SplitConfig
    from builder.fs.parquet import split_group_rows

    assert split_group_rows(1_000, SplitConfig().shares()) == {
        "train": 1_000,
        "validation": 56,
        "test": 56,
    }
    shares = {"train": 0.5, "validation": 0.25, "test": 0.25}
    assert split_group_rows(10_000, shares) == {"train": 10_000, "validation": 5_000, "test": 5_000}
    # the largest split gets the full size, whichever it is; none under a twentieth
    shares = {"train": 0.01, "validation": 0.0, "test": 0.99}
    assert split_group_rows(1_000, shares) == {"train": 50, "validation": 50, "test": 1_000}
    assert split_group_rows(1_000, dict.fromkeys(shares, 0.0)) == dict.fromkeys(shares, 1_000)


# A column whose dictionary passes its 1 MB limit inside one row group: the write that then
# finds the disk full is the one pyarrow's chunked writer aborts on
# (docs/upstream/pyarrow_cdc_enospc.py).
FULL_DISK_SCRIPT = """
import os, sys
import pyarrow as pa
from pathlib import Path
from builder.fs.parquet import ShardedWriter
schema = pa.schema([("text", pa.string())])
table = pa.table({"text": [f"{i:08d}-" + os.urandom(400).hex() for i in range(3000)]}, schema)
writer = ShardedWriter(Path(sys.argv[1]), "train", schema, 100_000, 10_000)
try:
    writer.write(table)
    writer.close()
except OSError as exc:
    print(exc.errno, exc.filename)
"""


def test_a_full_disk_mid_file_is_an_oserror_not_an_abort(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.small_disk import fill, small_disk

    with small_disk(tmp_path / "disk", 2) as disk:
        fill(disk, leave=256 << 10)  # full within the flush of the buffered pages
        done = subprocess.run(
            [sys.executable, "-c", FULL_DISK_SCRIPT, str(disk / "config")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-500:]  # 134 (SIGABRT) through a native file
        errno, filename = done.stdout.split()
        assert int(errno) == 28 and filename.endswith(".train-00000.parquet.partial")


def test_the_sink_writes_the_bytes_a_native_file_does(tmp_path: Path) -> None:
    from builder.fs.parquet import WRITE_OPTIONS

    table = rows(3_000)
    (path,) = write(tmp_path / "sharded", table, piece=3_000, group_rows=3_000, max_rows=3_000)
    pq.write_table(table, tmp_path / "native.parquet", row_group_size=3_000, **WRITE_OPTIONS)
    assert path.read_bytes() == (tmp_path / "native.parquet").read_bytes()


def test_each_file_is_named_and_listed_by_the_sha256_of_its_bytes(tmp_path: Path) -> None:
    """The digests are hashed as the bytes are written, never read back: they are those of
    the files as stored."""
    writer = ShardedWriter(tmp_path, "train", SCHEMA, 400, 64)
    table = rows(1_000)
    for start in range(0, table.num_rows, 97):
        writer.write(table.slice(start, 97))
    paths = writer.close()
    assert len(paths) == 3
    for path in paths:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert writer.digests[path] == digest
        assert path.name.endswith(f"-{digest[:16]}.parquet")


def test_a_file_reaches_python_in_a_few_large_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call into the sink takes the GIL from the threads deriving meanwhile: a file's
    bytes go through in writes of ``WRITE_BUFFER_BYTES``, not one per page and header."""
    from builder.fs import parquet

    sizes: list[int] = []
    write_through = parquet.HeldErrorSink.write

    def counted(self: parquet.HeldErrorSink, data: object) -> int:
        size = write_through(self, data)
        sizes.append(size)
        return size

    monkeypatch.setattr(parquet, "WRITE_BUFFER_BYTES", 64 << 10, raising=False)
    monkeypatch.setattr(parquet.HeldErrorSink, "write", counted)
    (path,) = write(tmp_path, rows(20_000), piece=500, group_rows=1_000, max_rows=20_000)
    stored = path.stat().st_size
    assert sum(sizes) == stored
    assert len(sizes) <= stored // (64 << 10) + 2 < 40
