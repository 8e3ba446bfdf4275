"""Parquet files as the Hub serves them best: one writer setting for the whole project.

zstd, column statistics and page index for fast filtered reads; content-defined chunking so
that a re-upload of a slightly changed file only sends the changed pages (Hub dedup). Data is
cast to the declared schema first: Polars produces ``large_string``/``large_list``, while the
card declares plain ``string``/``list``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

WRITE_OPTIONS = {
    "compression": "zstd",
    "write_statistics": True,
    "write_page_index": True,
    "use_content_defined_chunking": True,
}
# Row groups have a fixed number of rows, whatever the pieces the data arrives in, so the
# bytes of a file depend only on its rows (not on batch or thread counts), and a writer holds
# at most one row group in memory. Objective rows carry whole conversations (≈ 1–16 KB a
# row, against ≈ 0.2–2 KB for table rows), so their groups are smaller: a pending group stays
# in the tens of MB however large the input.
TABLE_GROUP_ROWS = 10_000
CONVERSATION_GROUP_ROWS = 1_000
NAME_DIGEST_CHARS = 16
# What a data file's writer gathers in Arrow before handing it to Python (``ShardedWriter``):
# a few dozen files are open at once, so a few MB in all.
WRITE_BUFFER_BYTES = 256 << 10


def split_group_rows(group_rows: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Rows per row group of each split: ``group_rows`` for the largest split, the others
    in proportion to their share of the rows (at least a twentieth of ``group_rows``). A
    writer holds each split's unfinished row group in memory: with one size for all, the
    rows of a 5 % split waited most of the build for their group to fill, among the
    longest-lived allocations of the export, and the peak grew with the input (see
    BENCHMARKS.md)."""
    largest = max(shares.values(), default=0.0)
    if largest <= 0:
        return dict.fromkeys(shares, group_rows)
    least = max(1, group_rows // 20)
    return {s: max(least, math.ceil(group_rows * r / largest)) for s, r in shares.items()}


# ``DataFrame.to_arrow(compat_level=ARROW_VIEWS)``: Polars' own string layout (Arrow string
# views) converts without a copy, and the cast to the declared ``string`` columns is then
# the one copy; the default conversion (``large_string``) copies every string once more.
ARROW_VIEWS = pl.CompatLevel.newest()  # of the file's sha256, in its name


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Select the declared columns in order and cast to the declared types."""
    return table.select(schema.names).cast(schema)


def compact(table: pa.Table) -> pa.Table:
    """``table`` in buffers of its own. A filtered or sliced piece can reference the whole
    buffers it was cut from (≈ 10× its size for the small validation and test pieces); held
    until a row group fills, those would make memory grow with the number of pieces."""
    if table.get_total_buffer_size() <= 2 * table.nbytes:
        return table
    return table.take(pa.array(range(table.num_rows), pa.int64()))


class HeldErrorSink(io.RawIOBase):
    """The file a Parquet writer writes to, failing only where Python can catch it.

    With content-defined chunking, pyarrow's column writer asserts that a page write inside
    it succeeds: a full disk there aborts the whole process (exit 134, ``column_writer.cc
    ... Check failed``; reproduced by ``docs/upstream/pyarrow_cdc_enospc.py``), so no error
    reaches Python and no cleanup runs. Here the first failed write is kept (and the file
    closed, so a removed file gives its space back at once), the writer is told every write
    succeeded, and ``check`` raises the kept error after each call into the writer. The
    bytes of a file that is written whole are the same as through a native file; ``digest``
    is their sha256, hashed as they are written rather than read back once the file is
    closed (the last files close at the end of the export, where nothing else runs).
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._file: io.BufferedWriter | None = open(path, "wb")  # noqa: SIM115 - closed below
        self._written = 0
        self._sha256 = hashlib.sha256()
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        size = memoryview(data).nbytes
        self._sha256.update(data)
        if self._file is not None:
            try:
                self._file.write(data)
            except OSError as exc:
                exc.filename = exc.filename or str(self.path)
                self.error = exc
                self._drop()
        self._written += size
        return size

    def tell(self) -> int:
        return self._written

    def digest(self) -> str:
        """sha256 (hex) of every byte written so far."""
        return self._sha256.hexdigest()

    def _drop(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):  # the flush may fail as the write did
                file.close()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                exc.filename = exc.filename or str(self.path)
                self.error = self.error or exc
            self._file = None
        super().close()

    def check(self) -> None:
        if self.error is not None:
            self._drop()
            raise self.error


class ShardedWriter:
    """Writes one split of one config as ``{split}-NNNNN-of-NNNNN-{digest}.parquet`` files.

    Rows may arrive in any number of pieces; they are written in row groups of exactly
    ``group_rows`` (the last one smaller), and a new file starts every ``max_rows`` rows.
    The total and the content are only known at the end, so files are renamed on
    ``close()``. ``{digest}`` is the start of the file's sha256: a file whose content
    changes changes its name, which is what ``datasets`` keys its cache of a local folder
    on (the card lists every file by name), while an unchanged file keeps its name (hard
    links, incremental rebuilds, upload dedup). ``digests`` maps each final path to its full
    sha256. Closing a writer that saw no rows writes one empty file.
    """

    def __init__(
        self,
        directory: Path,
        split: str,
        schema: pa.Schema,
        max_rows: int,
        group_rows: int = TABLE_GROUP_ROWS,
    ) -> None:
        self.directory, self.split, self.schema, self.max_rows = directory, split, schema, max_rows
        self.group_rows = group_rows
        self.rows = 0
        self._paths: list[Path] = []
        self._writer: pq.ParquetWriter | None = None
        self._sink: HeldErrorSink | None = None
        self._stream: pa.BufferedOutputStream | None = None
        self._in_file = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._hashed: dict[Path, str] = {}  # sha256 of each file closed
        self._rows: dict[Path, int] = {}  # rows of each file opened
        self.digests: dict[Path, str] = {}
        self.file_rows: dict[Path, int] = {}  # rows of each final file, in order

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self._pending.append(compact(conform(table, self.schema)))
        self._pending_rows += table.num_rows
        while self._pending_rows >= self._next_group_size():
            self._write_group(self._next_group_size())

    def _next_group_size(self) -> int:
        room = self.max_rows - self._in_file if self._writer is not None else self.max_rows
        return min(self.group_rows, room if room > 0 else self.max_rows)

    def _write_group(self, size: int) -> None:
        pending = pa.concat_tables(self._pending)
        # One chunk per column, so page boundaries never depend on how the rows arrived.
        group = pending.slice(0, size).combine_chunks()
        rest = pending.slice(size)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows
        if self._writer is None or self._in_file >= self.max_rows:
            self._open_next()
        assert self._writer is not None and self._sink is not None
        self._writer.write_table(group, row_group_size=size)
        self._sink.check()
        self._rows[self._paths[-1]] = self._rows.get(self._paths[-1], 0) + size
        self._in_file += size
        self.rows += size

    def _open_next(self) -> None:
        self._close_file()
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f".{self.split}-{len(self._paths):05d}.parquet.partial"
        self._paths.append(path)
        self._sink = HeldErrorSink(path)
        # Buffered in Arrow: the writer's every page and page header would otherwise be a
        # call into Python (about 30,000 at 5,000 episodes), each waiting for the GIL that
        # the derive threads hold; buffered, a call per WRITE_BUFFER_BYTES. Same bytes.
        self._stream = pa.BufferedOutputStream(
            pa.PythonFile(self._sink, mode="w"), WRITE_BUFFER_BYTES
        )
        self._writer = pq.ParquetWriter(self._stream, self.schema, **WRITE_OPTIONS)
        self._in_file = 0

    def _close_file(self) -> None:
        if self._writer is None or self._sink is None or self._stream is None:
            return
        self._writer.close()
        self._stream.close()  # its last bytes reach the sink
        self._sink.close()
        self._sink.check()
        self._hashed[self._sink.path] = self._sink.digest()

    def close(self) -> list[Path]:
        while self._pending_rows:
            self._write_group(min(self._pending_rows, self._next_group_size()))
        if self._writer is None:
            self._open_next()
        self._close_file()
        total = len(self._paths)
        final = []
        for i, path in enumerate(self._paths):
            digest = self._hashed[path]
            name = f"{self.split}-{i:05d}-of-{total:05d}-{digest[:NAME_DIGEST_CHARS]}.parquet"
            target = self.directory / name
            path.rename(target)
            self.digests[target] = digest
            self.file_rows[target] = self._rows.get(path, 0)
            final.append(target)
        return final
