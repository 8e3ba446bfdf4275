"""Export stage: derived objectives and tables → a Hugging Face dataset folder.

Layout: ``{config}/{split}-NNNNN-of-NNNNN.parquet`` for every config, ``README.md`` (the
card, whose YAML declares the configs) and ``manifest.json``. No loading script.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.config import BuildConfig
from builder.export.buckets import batches, load
from builder.export.card import ExportedConfig, card_markdown
from builder.export.manifest import (
    builder_version,
    file_digests,
    split_section,
    write_manifest,
)
from builder.export.writer import ConfigWriter, SplitKeys, write_config
from builder.ingest import IngestResult
from builder.normalize import Normalizer
from builder.parquet import CONVERSATION_GROUP_ROWS, TABLE_GROUP_ROWS
from builder.rejects import RejectsWriter
from schemas.episode import SCHEMA_VERSION
from schemas.sessions import SESSION_TABLES
from schemas.tables import TABLES

TABLE_SLICE_ROWS = 5_000
Plan = tuple[str, Callable[[], Iterator[pl.LazyFrame]], pa.Schema]


def write_buckets(
    out: Path,
    parts: Iterable[Mapping[str, pl.LazyFrame]],
    config: BuildConfig,
    with_split: Callable[[pl.LazyFrame], pl.LazyFrame],
    sessions: Any = None,
) -> list[ExportedConfig]:
    """Every objective and every episode table, a bucket of question ids at a time, then the
    session rows of ``sft`` and ``self_correction``. A bucket's tables are read into memory
    once; all its configs come from one ``collect_all`` (shared sub-plans run once), and
    are written on a second thread while the next bucket is derived."""
    from builder.derive import OBJECTIVE_MODULES, DeriveOptions

    options = DeriveOptions(
        dpo_max_pairs_per_episode=config.dpo_max_pairs_per_episode,
        max_output_chars=config.max_output_chars,
    )
    max_rows = config.parquet_max_rows_per_file
    writers = {
        name: ConfigWriter(out, name, module.SCHEMA, max_rows, CONVERSATION_GROUP_ROWS)
        for name, module in OBJECTIVE_MODULES.items()
    }
    writers |= {
        name: ConfigWriter(out, name, schema, max_rows, TABLE_GROUP_ROWS)
        for name, schema in TABLES.items()
    }

    def write_all(pieces: dict[str, pl.DataFrame]) -> None:
        for name, piece in pieces.items():
            writers[name].write(piece)

    with ThreadPoolExecutor(1, thread_name_prefix="export-write") as writing:
        pending: Future[None] | None = None
        for part in parts:
            loaded = load(part)
            frames = [m.derive(loaded, options) for m in OBJECTIVE_MODULES.values()]
            frames += [loaded[name] for name in TABLES]
            collected = pl.collect_all([with_split(frame) for frame in frames])
            pieces = dict(zip(writers, collected, strict=True))
            if pending is not None:
                pending.result()
            pending = writing.submit(write_all, pieces)
        if pending is not None:
            pending.result()
    if sessions is not None:
        for name in ("sft", "self_correction"):
            writers[name].write(with_split(getattr(sessions, name).lazy()).collect())
    return [
        ExportedConfig(
            name,
            writer.schema,
            writer.close(),
            "objective" if name in OBJECTIVE_MODULES else "table",
        )
        for name, writer in writers.items()
    ]


def export_dataset(
    out: Path,
    parts: Iterable[Mapping[str, pl.LazyFrame]],
    tables: Mapping[str, pl.LazyFrame],
    splits: pl.DataFrame,
    splits_schema: pa.Schema,
    config: BuildConfig,
    result: IngestResult,
    normalizer: Normalizer,
    rejects: RejectsWriter,
    sessions: Any = None,
    redactions: Mapping[str, int] | None = None,
    tables_dir: Path | None = None,
) -> dict[str, Any]:
    """Write the dataset folder from the buckets ``parts`` (``builder.export.buckets``);
    ``tables`` are the staging tables (ids and flags only are read from them), in
    ``tables_dir`` (default: ``tables`` beside ``out``, as the build lays them out)."""
    tables_dir = tables_dir or out.parent / "tables"
    from builder.derive.eligibility import exclusion_counts

    out.mkdir(parents=True, exist_ok=True)  # an input with no valid rows still gets a card
    keys = SplitKeys.of(splits, tables["episodes"])

    def streamed(name: str) -> Callable[[], Iterator[pl.LazyFrame]]:
        """A table in input order, ``TABLE_SLICE_ROWS`` rows at a time, with its split."""

        def frames() -> Iterator[pl.LazyFrame]:
            for frame in batches(tables_dir / f"{name}.parquet", TABLE_SLICE_ROWS):
                yield keys.attach(frame.lazy())

        return frames

    episode_count = result.rows.get("episodes", 0)
    plan: list[Plan] = []
    if sessions is not None:
        plan += [(n, streamed(n), schema) for n, schema in SESSION_TABLES.items()]
    plan.append(("splits", lambda: iter([splits.lazy()]), splits_schema))

    def write(item: Plan) -> ExportedConfig:
        name, frames, schema = item
        rows = write_config(out, name, frames(), schema, config.parquet_max_rows_per_file)
        return ExportedConfig(name, schema, rows, "table")

    exported = write_buckets(out, parts, config, keys.attach, sessions)
    exported += [write(item) for item in plan]
    excluded = exclusion_counts(tables)
    stats = normalizer.stats
    manifest: dict[str, Any] = {
        "builder_version": builder_version(),
        "schema_version": SCHEMA_VERSION,
        "inputs": [
            {
                "path": s.path,
                "kind": result.kinds[s.path],
                "sha256": s.sha256,
                "bytes": s.bytes,
                "lines": s.lines,
                "valid": result.counts[s.path].valid,
                "rejected": result.counts[s.path].rejected,
                "blank": result.counts[s.path].blank,
            }
            for s in result.inputs
        ],
        "configs": {c.name: {"kind": c.kind, "rows": dict(c.rows)} for c in exported},
        "files": file_digests(out),
        "rejects": {"total": rejects.total, "by_kind": dict(sorted(rejects.by_kind.items()))},
        "checks": {
            "episodes_by_kind": dict(sorted(stats.checks.items())),
            "questions_by_kind": dict(sorted(stats.question_checks.items())),
        },
        "extra_fields": dict(sorted(stats.extra_fields.items())),
        "bounded_hook_values": stats.bounded_hook_values,
        "training_exclusions": dict(sorted(excluded.items())),
        "sessions": sessions.summary if sessions is not None else None,
        "redaction": {
            "enabled": config.redaction_enabled,
            "by_kind": dict(redactions or {}),
        },
        "splits": split_section(config, splits),
        "options": {
            "strict": config.strict,
            "max_reject_ratio": config.max_reject_ratio,
            "dpo_max_pairs_per_episode": config.dpo_max_pairs_per_episode,
            "hook_value_limit": config.hook_value_limit,
            "max_output_chars": config.max_output_chars,
        },
    }
    write_manifest(out, manifest)
    card = card_markdown(exported, config.card, manifest, episode_count)
    (out / "README.md").write_text(card, encoding="utf-8")
    return manifest
