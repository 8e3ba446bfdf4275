"""Export stage: derived objectives and tables → a Hugging Face dataset folder.

Layout: ``{config}/{split}-NNNNN-of-NNNNN.parquet`` for every config, ``README.md`` (the
card, whose YAML declares the configs) and ``manifest.json``. No loading script.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.config import BuildConfig
from builder.export.buckets import batches, bucket_bounds, partition
from builder.export.card import ExportedConfig, card_markdown
from builder.export.manifest import (
    builder_version,
    file_digests,
    split_section,
    write_manifest,
)
from builder.export.writer import SplitKeys, write_config
from builder.ingest import IngestResult
from builder.normalize import Normalizer
from builder.rejects import RejectsWriter
from schemas.episode import SCHEMA_VERSION
from schemas.sessions import SESSION_TABLES
from schemas.tables import TABLES

TABLE_SLICE_ROWS = 5_000
Plan = tuple[str, Callable[[], Iterator[pl.LazyFrame]], pa.Schema, str]


def objective_plans(
    tables: Mapping[str, pl.LazyFrame],
    config: BuildConfig,
    episodes: int,
    with_split: Callable[[pl.LazyFrame], pl.LazyFrame],
    tables_dir: Path,
    work: Path,
    sessions: Any = None,
) -> list[Plan]:
    """Every objective as pieces: one per bucket of question ids, then the session rows
    (``sft`` and ``self_correction``)."""
    from builder.derive import OBJECTIVE_MODULES, DeriveOptions

    options = DeriveOptions(
        dpo_max_pairs_per_episode=config.dpo_max_pairs_per_episode,
        max_output_chars=config.max_output_chars,
    )
    parts = partition(tables_dir, tables, bucket_bounds(episodes), work)

    def pieces(name: str, module: Any) -> Callable[[], Iterator[pl.LazyFrame]]:
        def frames() -> Iterator[pl.LazyFrame]:
            for part in parts:
                yield with_split(module.derive(part, options))
            if sessions is not None and name in ("sft", "self_correction"):
                yield with_split(getattr(sessions, name).lazy())

        return frames

    return [
        (name, pieces(name, module), module.SCHEMA, "objective")
        for name, module in OBJECTIVE_MODULES.items()
    ]


def export_dataset(
    out: Path,
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
    """Write the dataset folder; ``tables_dir`` holds the staging tables behind ``tables``
    (default: ``tables`` beside ``out``, as the build lays them out)."""
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
    work = out.parent / f".{out.name}.buckets"  # removed once the configs are written
    plan = objective_plans(tables, config, episode_count, keys.attach, tables_dir, work, sessions)
    table_schemas = {**TABLES, **(SESSION_TABLES if sessions is not None else {})}
    plan += [(n, streamed(n), schema, "table") for n, schema in table_schemas.items()]
    plan.append(("splits", lambda: iter([splits.lazy()]), splits_schema, "table"))

    def write(item: Plan) -> ExportedConfig:
        name, frames, schema, kind = item
        rows = write_config(out, name, frames(), schema, config.parquet_max_rows_per_file)
        return ExportedConfig(name, schema, rows, kind)

    # One config at a time: two in flight were ~15 % faster but held two configs' pieces in
    # memory at once. Polars already spreads each query over the cores.
    try:
        exported = [write(item) for item in plan]
    finally:
        shutil.rmtree(work, ignore_errors=True)
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
