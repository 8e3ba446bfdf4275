"""The staging tables' writer (``builder.ingest.staging.TableSink``): rows land in the segment
they were written to, and a failure on its writing thread is raised in the caller's."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builder.ingest.staging import TableSink
from schemas.tables import TABLES


def questions(*ids: str) -> dict[str, pa.Table]:
    schema = TABLES["questions"]
    rows = [{"question_id": i, "question_text": f"text of {i}"} for i in ids]
    return {"questions": pa.Table.from_pylist(rows, schema=schema)}


def test_rows_land_in_the_segment_they_were_written_to(tmp_path: Path) -> None:
    sink = TableSink(tmp_path)
    sink.segment("00001")
    sink.write(questions("a", "b"))
    sink.segment("00002")  # switched on the writing thread, after the write before it
    sink.segment("00003")  # a segment with no rows still gets every table, empty
    sink.write(questions("c"))
    sink.close()
    read = {
        s: pq.read_table(tmp_path / s / "questions.parquet")["question_id"].to_pylist()
        for s in ("00001", "00002", "00003")
    }
    assert read == {"00001": ["a", "b"], "00002": [], "00003": ["c"]}
    for segment in ("00001", "00002", "00003"):
        assert sorted(p.stem for p in (tmp_path / segment).iterdir()) == sorted(TABLES)
    assert sink.rows["questions"] == 3


def test_a_segment_that_cannot_be_opened_fails_the_next_write(tmp_path: Path) -> None:
    sink = TableSink(tmp_path)
    sink.segment("00001")
    sink.write(questions("a"))
    (tmp_path / "00002").write_text("a file where the segment's folder goes")
    sink.segment("00002")  # returns at once: the folder is made on the writing thread
    with pytest.raises(OSError) as raised:
        sink.write(questions("b"))
    assert "00002" in str(raised.value)
    sink.close()
    assert pq.read_table(tmp_path / "00001" / "questions.parquet").num_rows == 1


def test_staging_tables_are_written_uncompressed(tmp_path: Path) -> None:
    # read once, then removed: compressing them cost more CPU than their bytes on disk
    sink = TableSink(tmp_path)
    sink.segment("00001")
    sink.write(questions("a", "b"))
    sink.close()
    meta = pq.read_metadata(tmp_path / "00001" / "questions.parquet")
    chunks = [meta.row_group(0).column(i) for i in range(meta.num_columns)]
    assert {chunk.compression for chunk in chunks} == {"UNCOMPRESSED"}
