"""The bucket cut made while the ingest stages its rows, so no bucket waits for a cut after it.

``buckets.partition`` cuts a segment's staging tables once they are complete: no bucket can
be derived before every staged row is read back and cut, and at 5,000 episodes of the bench
profile that pass took about a second with the cores not both busy. Here each batch of rows
is cut as the ingest stages it (on the staging thread, ``builder.ingest.staging.TableSink``)
into ``FINE_BUCKETS`` equal ranges of question ids, gathered into the same scratch files
(``buckets.Scratch``). Once the segment is staged and its number of buckets known, each
bucket is a run of those ranges (``bucket_index(buckets, grain=FINE_BUCKETS)``): nothing is
read or cut again. The files do not depend on where the buckets' bounds fall
(``buckets``), so they are the same bytes as the cut after the ingest makes.

Only one segment is cut here: the first one staged that needs more than one bucket (and no
more than there are ranges), the first one the export would wait for (an earlier one is one
bucket, its staging tables read whole).
Each later segment is cut after the ingest, while the one before it is derived, as the cut
then keeps no bucket waiting; and the disk holds no more scratch files than that way alone
(one segment's, beside every segment's staging tables). The cut after the ingest also takes
what this one cannot: a segment needing more buckets than there are ranges (over ≈ 2 GiB
of staged rows), one whose rows did not all come through here, or a child row staged
without its episode.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import pyarrow as pa

from builder.export.buckets import (
    BUCKETED,
    LOOKUP,
    LOOKUP_SCHEMA,
    Bucket,
    Scratch,
    bucket_count,
    bucket_index,
    cut_batch,
)
from schemas.tables import TABLES

FINE_BUCKETS = 64  # a power of two: buckets of 32 MiB for up to 2 GiB of staged rows


class StagedCut:
    """Cuts each staged batch into ``FINE_BUCKETS`` ranges, a segment at a time, in scratch
    files under ``{directory}/{segment}/{table}/``. ``segment``, ``add`` and ``finish`` are
    called on the staging thread (``builder.ingest.staging.StagedRows``): as a segment's
    staging files open, with each batch written there, and once the ingest ends;
    ``buckets`` (from the export) once the ingest has ended."""

    def __init__(self, directory: Path, fine: int | None = None) -> None:
        self.directory, self.fine = directory, fine or FINE_BUCKETS
        self._schemas = {name: TABLES[name] for name in BUCKETED} | {LOOKUP: LOOKUP_SCHEMA}
        self._open: _Segment | None = None
        self._done: dict[str, _Segment] = {}
        self._kept = False  # a segment is cut: the later ones are cut after the ingest

    def segment(self, name: str) -> None:
        self.finish()
        if not self._kept:
            self._open = _Segment(self.directory / name, self._schemas, self.fine)

    def add(self, tables: Mapping[str, pa.Table]) -> None:
        if self._open is not None:
            self._open.add(tables)

    def finish(self) -> None:
        """The open segment is staged whole: its last rows go to their files (a segment of
        one bucket keeps none: its staging tables are that bucket, as read)."""
        segment, self._open = self._open, None
        if segment is not None and segment.finish():
            self._done[segment.directory.name] = segment
            self._kept = True

    def buckets(self, name: str, count: int, staged: Mapping[str, int]) -> list[Bucket] | None:
        """Segment ``name``'s rows in ``count`` buckets, or None when this cut cannot give
        them (its scratch files are then removed): more buckets than ranges, or rows that
        did not all come through ``add`` (``staged``: each table's rows, as written)."""
        segment = self._done.pop(name, None)
        return None if segment is None else segment.buckets(count, staged)

    def close(self) -> None:
        """Remove what no export took (a build that stopped)."""
        self.finish()
        for segment in self._done.values():
            segment.discard()
        self._done.clear()

    def __enter__(self) -> StagedCut:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _Segment:
    def __init__(self, directory: Path, schemas: Mapping[str, pa.Schema], fine: int) -> None:
        self.directory, self.fine = directory, fine
        self.ranges = [Bucket(schemas, grain=fine) for _ in range(fine)]
        self.rows: Counter[str] = Counter()
        self.bytes = 0
        self.whole = True  # every staged row was placed
        self._scratch: dict[str, Scratch] = {}

    def add(self, tables: Mapping[str, pa.Table]) -> None:
        if not self.whole:
            return
        episodes = tables.get("episodes")
        by_episode = None
        if episodes is not None and episodes.num_rows:
            ids = pl.DataFrame({"episode_id": episodes.column("episode_id")})
            keys = pl.DataFrame({"question_id": episodes.column("question_id")})
            fine = keys.select(_bucket=bucket_index(self.fine, self.fine)).to_series()
            by_episode = ids.with_columns(fine)
        for name in BUCKETED:
            table = tables.get(name)
            if table is None or not table.num_rows:
                continue
            if "question_id" not in table.column_names and by_episode is None:
                self.whole = False  # child rows without their episodes: cut after the ingest
                return
            schema = TABLES[name]
            pieces = cut_batch(schema, self.fine, by_episode, lambda t=table: t, self.fine)
            if any(k is None for k, _ in pieces):
                self.whole = False
                return
            for k, piece in pieces:
                self._scratch_of(name, schema).add(k, piece)
            self.rows[name] += table.num_rows
            self.bytes += table.nbytes

    def _scratch_of(self, name: str, schema: pa.Schema) -> Scratch:
        scratch = self._scratch.get(name)
        if scratch is None:
            (self.directory / name).mkdir(parents=True, exist_ok=True)
            scratch = self._scratch[name] = Scratch(
                self.directory / name, name, schema, self.ranges
            )
        return scratch

    def finish(self) -> bool:
        """Hand the last rows to the writers; False (nothing kept) for a segment that this
        cut cannot serve or that is one bucket (as far as the rows' Arrow size tells: the
        export counts the staged bytes as Parquet does, and ``buckets`` checks again)."""
        count = bucket_count(max(self.rows["episodes"], self.rows["questions"]), self.bytes)
        if not self.whole or not 1 < count <= self.fine:
            self.discard()
            return False
        for scratch in self._scratch.values():
            scratch.finish()
        return True

    def buckets(self, count: int, staged: Mapping[str, int]) -> list[Bucket] | None:
        try:
            for scratch in self._scratch.values():
                scratch.wait()
        except BaseException:
            self.discard()
            raise
        complete = all(self.rows[name] == staged.get(name, 0) for name in BUCKETED)
        if not complete or count > self.fine:
            self.discard()
            return None
        out = [Bucket(self.ranges[0].schemas, grain=self.fine) for _ in range(count)]
        for k, fine in enumerate(self.ranges):
            coarse = out[k * count // self.fine]
            for name, pieces in fine.pieces.items():
                coarse.pieces.setdefault(name, []).extend(pieces)
        return out

    def discard(self) -> None:
        for scratch in self._scratch.values():
            scratch.discard()
            scratch.close()
        self._scratch.clear()
        shutil.rmtree(self.directory, ignore_errors=True)
