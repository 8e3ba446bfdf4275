"""Parquet files as the Hub serves them best: one writer setting for the whole project.

zstd, column statistics and page index for fast filtered reads; content-defined chunking so
that a re-upload of a slightly changed file only sends the changed pages (Hub dedup). Data is
cast to the declared schema first: Polars produces ``large_string``/``large_list``, while the
card declares plain ``string``/``list``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

WRITE_OPTIONS = {
    "compression": "zstd",
    "write_statistics": True,
    "write_page_index": True,
    "use_content_defined_chunking": True,
}
ROW_GROUP_ROWS = 50_000


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Select the declared columns in order and cast to the declared types."""
    return table.select(schema.names).cast(schema)


class ShardedWriter:
    """Writes one split of one config as ``{split}-NNNNN-of-NNNNN.parquet`` files.

    A new file starts every ``max_rows`` rows. The total is only known at the end, so files
    are renamed on ``close()``. Closing a writer that saw no rows writes one empty file.
    """

    def __init__(self, directory: Path, split: str, schema: pa.Schema, max_rows: int) -> None:
        self.directory, self.split, self.schema, self.max_rows = directory, split, schema, max_rows
        self.rows = 0
        self._paths: list[Path] = []
        self._writer: pq.ParquetWriter | None = None
        self._in_file = 0

    def write(self, table: pa.Table) -> None:
        # One chunk per column: page boundaries must not depend on how many threads
        # produced the data, or rebuilds of the same input differ in bytes.
        table = conform(table, self.schema).combine_chunks()
        offset = 0
        while offset < table.num_rows:
            if self._writer is None or self._in_file >= self.max_rows:
                self._open_next()
            take = min(self.max_rows - self._in_file, table.num_rows - offset)
            assert self._writer is not None
            self._writer.write_table(table.slice(offset, take), row_group_size=ROW_GROUP_ROWS)
            self._in_file += take
            self.rows += take
            offset += take

    def _open_next(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f".{self.split}-{len(self._paths):05d}.parquet.partial"
        self._paths.append(path)
        self._writer = pq.ParquetWriter(path, self.schema, **WRITE_OPTIONS)
        self._in_file = 0

    def close(self) -> list[Path]:
        if self._writer is None:
            self._open_next()
        assert self._writer is not None
        self._writer.close()
        total = len(self._paths)
        final = []
        for i, path in enumerate(self._paths):
            target = self.directory / f"{self.split}-{i:05d}-of-{total:05d}.parquet"
            path.rename(target)
            final.append(target)
        return final
