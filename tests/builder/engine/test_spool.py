"""Results handed back through files (``builder.engine.spool``): the same value as through
the pipe, its buffers read in place from an aligned file that is gone once taken; small
results, and results whose file cannot be written, travel through the pipe."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa

from builder.engine import LocalEngine, spool


def _table(rows: int) -> pa.Table:
    return pa.table(
        {
            "n": pa.array(range(rows), pa.int64()),
            "text": pa.array([f"row {i} " * (i % 7) for i in range(rows)], pa.string()),
            "flag": pa.array([i % 3 == 0 for i in range(rows)], pa.bool_()),
        }
    )


def test_a_large_result_comes_back_from_a_file_it_removes(tmp_path: Path) -> None:
    table = _table(100_000)
    item = spool.hand_over({"rows": table, "count": 3}, tmp_path)
    assert isinstance(item, spool.Spooled)
    assert len(item.pickled) < 10_000  # the buffers are in the file, not the pickle
    assert [p.name for p in tmp_path.iterdir()] == [Path(item.path).name]
    assert all(at % spool.ALIGNMENT == 0 for at, _ in item.buffers)
    taken = spool.take(item)
    assert not list(tmp_path.iterdir())  # removed; the mapping holds the bytes
    assert taken["count"] == 3 and taken["rows"].equals(table)
    column = taken["rows"].column("n").chunk(0)
    assert column.buffers()[1].address % spool.ALIGNMENT == 0


def test_a_small_result_travels_in_band(tmp_path: Path) -> None:
    item = spool.hand_over(_table(10), tmp_path)
    assert isinstance(item, bytes)
    assert not list(tmp_path.iterdir())
    assert spool.take(item).equals(_table(10))


def test_a_result_whose_file_cannot_be_written_travels_in_band(tmp_path: Path) -> None:
    table = _table(100_000)
    item = spool.hand_over(table, tmp_path / "gone")  # no such folder
    assert isinstance(item, bytes)
    assert pickle.loads(item).equals(table)


def test_the_pool_spools_in_a_folder_of_its_own_removed_on_close(tmp_path: Path) -> None:
    engine = LocalEngine(2, tmp_path)
    try:
        (folder,) = tmp_path.iterdir()
        got = list(engine.map(_table, [(100_000,), (5,), (50_000,)]))
        assert not list(folder.iterdir())  # every result taken, every file gone
    finally:
        engine.close()
    assert not list(tmp_path.iterdir())
    for table, rows in zip(got, (100_000, 5, 50_000), strict=True):
        assert table.equals(_table(rows))
