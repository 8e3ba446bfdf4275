"""``BatchResult`` ↔ Arrow: the per-batch output as plain Arrow tables, and a batch of lines
as one Arrow table.

One encoding, two users: the incremental-build cache (``builder.cache``) stores a batch's
tables as Arrow IPC files, and the Ray engine (``builder.ingest.ray_engine``) ships lines to
workers and results back as Arrow. A decoded batch is the same as the one
``normalize_batch`` returned (same values, one chunk per column), so the commit that
follows writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby

import pyarrow as pa

from builder.normalize.episode import EpisodeInfo
from builder.normalize.rows import EPISODE_TABLES, EPISODES_WITHOUT_CHECKS
from builder.sources.inputs import SourceLine
from builder.validate.reject import FieldError, Reject
from schemas.tables import TABLES

STRINGS = pa.list_(pa.string())

# One row per non-blank line of the batch, in order: an episode (``reject_kind`` null) or
# a reject (the ``EpisodeInfo`` columns null).
OUTCOMES = pa.schema(
    [
        pa.field("number", pa.int64(), nullable=False),
        pa.field("episode_id", pa.string()),
        pa.field("question_id", pa.string()),
        pa.field("question_gt_hash", pa.string()),
        pa.field("gold_hash", pa.string()),
        pa.field("checks", STRINGS),
        pa.field("question_checks", STRINGS),
        pa.field("extra_paths", STRINGS),
        pa.field("bounded", pa.int64()),
        pa.field("counts", pa.list_(pa.int64())),
        pa.field("duplicate_keys", STRINGS),
        pa.field("reject_kind", pa.string()),
        pa.field("source_file", pa.string()),
        pa.field(
            "errors",
            pa.list_(pa.struct([pa.field("path", pa.string()), pa.field("message", pa.string())])),
        ),
        pa.field("raw", pa.binary()),
        pa.field("key", pa.string()),
    ]
)

# The tables of one batch, in a fixed order; ``episodes`` has no ``checks`` column yet.
BATCH_SCHEMAS: dict[str, pa.Schema] = {
    "outcomes": OUTCOMES,
    **{name: TABLES[name] for name in EPISODE_TABLES[1:]},
    "episodes": EPISODES_WITHOUT_CHECKS,
    "questions": TABLES["questions"],
}

LINES = pa.schema(
    [
        pa.field("path", pa.string(), nullable=False),  # a batch may span files
        pa.field("number", pa.int64(), nullable=False),
        pa.field("raw", pa.large_binary(), nullable=False),
        pa.field("too_long", pa.bool_(), nullable=False),
    ]
)


@dataclass
class BatchResult:
    """One batch of lines, normalized without any build-wide state.

    ``outcomes`` has one entry per non-blank line, in order: an ``EpisodeInfo`` or a
    ``Reject``. ``tables`` hold the rows of every valid episode (``episodes`` without its
    ``checks`` column; ``questions`` with one row per valid episode), which the commit then
    filters and completes."""

    outcomes: list[EpisodeInfo | Reject]
    tables: dict[str, pa.Table]

    def by_file(self, paths: list[str]) -> Iterator[tuple[str, BatchResult]]:
        """The batch cut where ``paths`` (one per outcome: the file of its line) changes:
        each file's share, in order, its tables zero-copy slices."""
        if len(set(paths)) == 1:  # the common batch: within one file
            yield paths[0], self
            return
        offsets = dict.fromkeys(self.tables, 0)
        start = 0
        for path, group in groupby(paths):
            end = start + sum(1 for _ in group)
            outcomes = self.outcomes[start:end]
            rows = dict.fromkeys(self.tables, 0)
            for info in outcomes:
                if isinstance(info, EpisodeInfo):
                    for name, n in zip(EPISODE_TABLES, info.counts, strict=True):
                        rows[name] += n
                    rows["questions"] += 1
            tables = {name: t.slice(offsets[name], rows[name]) for name, t in self.tables.items()}
            for name, n in rows.items():
                offsets[name] += n
            yield path, BatchResult(outcomes, tables)
            start = end


def outcomes_table(outcomes: list[EpisodeInfo | Reject]) -> pa.Table:
    columns: dict[str, list[object]] = {f.name: [] for f in OUTCOMES}
    for o in outcomes:
        if isinstance(o, Reject):
            values: dict[str, object] = {
                "number": o.line,
                "reject_kind": o.kind,
                "source_file": o.source_file,
                "errors": [{"path": e.path, "message": e.message} for e in o.errors],
                "raw": o.raw,
                "key": o.key,
            }
        else:
            values = {
                "number": o.number,
                "episode_id": o.episode_id,
                "question_id": o.question_id,
                "question_gt_hash": o.question_gt_hash,
                "gold_hash": o.gold_hash,
                "checks": o.checks,
                "question_checks": o.question_checks,
                "extra_paths": o.extra_paths,
                "bounded": o.bounded,
                "counts": list(o.counts),
                "duplicate_keys": o.duplicate_keys,
            }
        for name, column in columns.items():
            column.append(values.get(name))
    arrays = [pa.array(columns[f.name], type=f.type) for f in OUTCOMES]
    return pa.Table.from_arrays(arrays, schema=OUTCOMES)


def outcomes_from_table(table: pa.Table) -> list[EpisodeInfo | Reject]:
    out: list[EpisodeInfo | Reject] = []
    for row in table.to_pylist():
        if row["reject_kind"] is not None:
            errors = tuple(FieldError(e["path"], e["message"]) for e in row["errors"])
            out.append(
                Reject(
                    row["source_file"],
                    row["number"],
                    row["reject_kind"],
                    errors,
                    row["raw"],
                    row["key"],
                )
            )
        else:
            out.append(
                EpisodeInfo(
                    row["number"],
                    row["episode_id"],
                    row["question_id"],
                    row["question_gt_hash"],
                    row["gold_hash"],
                    row["checks"],
                    row["question_checks"],
                    row["extra_paths"],
                    row["bounded"],
                    tuple(row["counts"]),
                    row["duplicate_keys"] or [],
                )
            )
    return out


def one_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """``table`` as exactly one record batch of ``schema`` (also when it has no rows)."""
    if table.num_rows == 0:
        return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
    batches = table.combine_chunks().to_batches()
    assert len(batches) == 1
    return batches[0]


def batch_to_record_batches(result: object) -> dict[str, pa.RecordBatch]:
    """A ``BatchResult`` as one record batch per entry of ``BATCH_SCHEMAS``."""
    tables = {"outcomes": outcomes_table(result.outcomes), **result.tables}  # type: ignore[attr-defined]
    return {name: one_batch(tables[name], schema) for name, schema in BATCH_SCHEMAS.items()}


def batch_from_record_batches(batches: dict[str, pa.RecordBatch]) -> BatchResult:
    """The inverse of ``batch_to_record_batches``; raises ``ValueError`` on a schema or row
    count that does not fit (a damaged cache entry)."""
    for name, schema in BATCH_SCHEMAS.items():
        if not batches[name].schema.equals(schema):
            raise ValueError(f"{name}: unexpected schema")
    outcomes = outcomes_from_table(pa.Table.from_batches([batches["outcomes"]]))
    infos = [o for o in outcomes if isinstance(o, EpisodeInfo)]
    for i, name in enumerate(EPISODE_TABLES):
        if sum(info.counts[i] for info in infos) != batches[name].num_rows:
            raise ValueError(f"{name}: row count does not match the outcomes")
    if batches["questions"].num_rows != len(infos):
        raise ValueError("questions: row count does not match the outcomes")
    tables = {
        name: pa.Table.from_batches([batches[name]]) for name in BATCH_SCHEMAS if name != "outcomes"
    }
    return BatchResult(outcomes, tables)


def lines_table(lines: list[SourceLine]) -> pa.Table:
    return pa.Table.from_arrays(
        [
            pa.array([line.path for line in lines], pa.string()),
            pa.array([line.number for line in lines], pa.int64()),
            pa.array([line.raw for line in lines], pa.large_binary()),
            pa.array([line.too_long for line in lines], pa.bool_()),
        ],
        schema=LINES,
    )


def lines_from_table(table: pa.Table) -> list[SourceLine]:
    paths = table.column("path").to_pylist()
    numbers = table.column("number").to_pylist()
    raws = table.column("raw").to_pylist()
    too_long = table.column("too_long").to_pylist()
    columns = zip(paths, numbers, raws, too_long, strict=True)
    return [SourceLine(p, n, r, t) for p, n, r, t in columns]


def to_ipc(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pa.RecordBatch:
    batches = list(pa.ipc.open_stream(pa.py_buffer(data)))
    if len(batches) != 1:
        raise ValueError(f"expected one record batch, got {len(batches)}")
    return batches[0]
