"""Export stage: derived objectives and tables → a Hugging Face dataset folder.

Layout: ``{config}/{split}-NNNNN-of-NNNNN.parquet`` for every config, ``README.md`` (the
card, whose YAML declares the configs) and ``manifest.json``. No loading script.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.config import BuildConfig
from builder.derive.eligibility import REASONS, exclusion_counts
from builder.export.buckets import Bucket, bucket_index, load
from builder.export.card import ExportedConfig, card_markdown
from builder.export.manifest import (
    SplitTally,
    builder_version,
    file_digests,
    split_section,
    write_manifest,
)
from builder.export.writer import ConfigWriter, SplitKeys
from builder.ingest import IngestResult
from builder.normalize import Normalizer
from builder.parquet import CONVERSATION_GROUP_ROWS, TABLE_GROUP_ROWS
from builder.rejects import RejectsWriter
from builder.splits import SplitConfig, assign_splits
from schemas.episode import SCHEMA_VERSION
from schemas.sessions import SESSION_TABLES
from schemas.tables import SPLIT_ASSIGNMENT, TABLES


def frame(table: pa.Table) -> pl.DataFrame:
    out = pl.from_arrow(table)
    assert isinstance(out, pl.DataFrame)
    return out


def write_buckets(
    out: Path,
    parts: list[Bucket],
    config: BuildConfig,
    session_keys: pl.DataFrame,
    tally: SplitTally,
    excluded: Counter[str],
) -> dict[str, ConfigWriter]:
    """Every objective, every episode table and the split assignment, a bucket of question
    ids at a time. A bucket's tables are read into memory once; its questions (and the
    session ids in its range) get their splits; all its configs come from one
    ``collect_all`` (shared sub-plans run once) and are written on a second thread while the
    next bucket is derived. Returns the writers, still open (session rows come next);
    ``tally`` and ``excluded`` (training exclusions by reason) are counted on the way."""
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
    writers["splits"] = ConfigWriter(out, "splits", SPLIT_ASSIGNMENT, max_rows, TABLE_GROUP_ROWS)
    by_bucket = session_keys.with_columns(_bucket=bucket_index(len(parts))).partition_by(
        "_bucket", as_dict=True, include_key=False, maintain_order=True
    )

    def write_all(pieces: dict[str, pl.DataFrame]) -> None:
        for name, piece in pieces.items():
            writers[name].write(piece)

    with ThreadPoolExecutor(1, thread_name_prefix="export-write") as writing:
        pending: Future[None] | None = None
        for k, part in enumerate(parts):
            loaded = load(part)
            questions = loaded["questions"].select("question_id", "normalized_text").collect()
            splits = assign_splits(
                pl.concat([questions, by_bucket.get((k,), session_keys.clear())]),
                SplitConfig.of(config),
            )
            tally.add(splits)
            excluded.update(exclusion_counts(loaded))
            keys = SplitKeys.of(splits, loaded["episodes"])
            frames = [m.derive(loaded, options) for m in OBJECTIVE_MODULES.values()]
            frames += [loaded[name] for name in TABLES]
            collected = pl.collect_all([*map(keys.attach, frames), splits.lazy()])
            pieces = dict(zip(writers, collected, strict=True))
            if pending is not None:
                pending.result()
            pending = writing.submit(write_all, pieces)
        if pending is not None:
            pending.result()
    return writers


def export_dataset(
    out: Path,
    parts: list[Bucket],
    config: BuildConfig,
    result: IngestResult,
    normalizer: Normalizer,
    rejects: RejectsWriter,
    sessions: Any = None,
    redactions: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Write the dataset folder from the buckets ``parts`` (``builder.export.buckets``) and,
    when there are any, the sessions (``builder.sessions.pipeline``: tables in memory)."""
    from builder.derive import OBJECTIVE_MODULES

    out.mkdir(parents=True, exist_ok=True)  # an input with no valid rows still gets a card
    session_keys = pl.DataFrame(schema={"question_id": pl.String, "normalized_text": pl.String})
    if sessions is not None:
        instructions = pl.col("normalized_instruction").alias("normalized_text")
        session_keys = frame(sessions.tables["sessions"]).select("question_id", instructions)
    tally, excluded = SplitTally(), Counter({reason: 0 for reason in REASONS})
    writers = write_buckets(out, parts, config, session_keys, tally, excluded)
    # Session rows come after every bucket; their ids' splits, the same pure function.
    keys = SplitKeys.of_questions(assign_splits(session_keys, SplitConfig.of(config)))
    if sessions is not None:
        for name in ("sft", "self_correction"):
            writers[name].write(keys.attach(getattr(sessions, name).lazy()).collect())
        for name, schema in SESSION_TABLES.items():
            max_rows = config.parquet_max_rows_per_file
            writers[name] = ConfigWriter(out, name, schema, max_rows, TABLE_GROUP_ROWS)
            writers[name].write(keys.attach(frame(sessions.tables[name]).lazy()).collect())
    order = [*OBJECTIVE_MODULES, *TABLES, *(SESSION_TABLES if sessions else ()), "splits"]
    exported = [
        ExportedConfig(
            name,
            writers[name].schema,
            writers[name].close(),
            "objective" if name in OBJECTIVE_MODULES else "table",
        )
        for name in order
    ]
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
        "splits": split_section(config, tally),
        "options": {
            "strict": config.strict,
            "max_reject_ratio": config.max_reject_ratio,
            "dpo_max_pairs_per_episode": config.dpo_max_pairs_per_episode,
            "hook_value_limit": config.hook_value_limit,
            "max_output_chars": config.max_output_chars,
        },
    }
    write_manifest(out, manifest)
    episode_count = result.rows.get("episodes", 0)
    card = card_markdown(exported, config.card, manifest, episode_count)
    (out / "README.md").write_text(card, encoding="utf-8")
    return manifest
