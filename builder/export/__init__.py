"""Export stage: derived objectives and tables → a Hugging Face dataset folder.

Layout: ``{config}/{split}-{segment}-NNNNN-of-NNNNN.parquet`` for every config (a segment
per run of inputs, ``builder.ingest.staging``; its export: ``builder.export.segment``),
``README.md`` (the card, whose YAML declares the configs) and ``manifest.json``. No loading
script.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.card_config import card_settings
from builder.config import BuildConfig
from builder.derive.splits.plan import HeldOutPlan
from builder.export.card import CardImages, ExportedConfig, card_markdown, card_yaml
from builder.export.manifest import builder_version, split_section, write_manifest
from builder.export.round_trip import round_trip_section
from builder.export.segment import SegmentOutput
from schemas.episode import SCHEMA_VERSION
from schemas.manifest import CARD, CARD_DIGEST
from schemas.objectives import OBJECTIVES
from schemas.sessions import SESSION_TABLES
from schemas.stages import Rejected, StageResults
from schemas.tables import SPLIT_ASSIGNMENT, TABLES
from schemas.vocabulary import EVAL_PREFIX, HOOK_ONLY, REASONS, SPLITS


def _files_by_split(name: str, segments: Iterable[SegmentOutput]) -> dict[str, list[str]]:
    """``{split: [path, ...]}`` of one config's data files, sorted (segment, then shard)."""
    out: dict[str, list[str]] = {}
    for path in sorted(p for s in segments for p in s.files if p.startswith(f"{name}/")):
        split = path[len(name) + 1 :].split("-", 1)[0]
        out.setdefault(split, []).append(path)
    return out


def layout_counts(out: Path, segments: Iterable[SegmentOutput]) -> dict[str, int]:
    """Episodes by the layout of their line (``schemas.layouts``), read back from the
    ``episodes`` files: only the one column."""
    paths = [out / p for s in segments for p in s.files if p.startswith("episodes/")]
    if not paths:
        return {}
    # One scan of every file: Polars reads them in parallel, outside the GIL.
    counts = pl.scan_parquet(paths).select("layout").drop_nulls().group_by("layout").len()
    return dict(sorted(counts.collect().iter_rows()))


def hashing_section(precision: int | None) -> dict[str, Any]:
    """The hash scheme every recomputed hash of this build used (``builder.contract.hashing``)."""
    return {"scheme": "exact" if precision is None else "rounded", "precision": precision}


def _total(counts: Iterable[Mapping[str, int]], keys: Iterable[str] = ()) -> dict[str, int]:
    """Counts added up, every key in ``keys`` present (zero when absent), in the order of
    ``keys``, then the others sorted: never in the order the parts happened to list them (a
    segment reused from the cache lists its counts sorted), since the card shows this order."""
    keys = list(keys)
    total = dict.fromkeys(keys, 0)
    for part in counts:
        for key, n in part.items():
            total[key] = total.get(key, 0) + n
    return {key: total.pop(key) for key in keys} | dict(sorted(total.items()))


def held_out_rows(segments: Iterable[SegmentOutput]) -> dict[str, dict[str, int]]:
    """Rows kept out of each config by the held-out plan, by reason (``bridges_splits``,
    ``eval:<name>``)."""
    total: dict[str, Counter[str]] = {}
    for segment in segments:
        for name, counts in segment.held_out.items():
            total.setdefault(name, Counter()).update(counts)
    return {name: dict(sorted(c.items())) for name, c in sorted(total.items())}


def decontamination_section(
    plan: HeldOutPlan | None, segments: list[SegmentOutput]
) -> dict[str, Any] | None:
    """The plan's decontamination facts, with the config × eval table of rows removed."""
    if plan is None or plan.decontamination is None:
        return None
    removed = {
        name: {
            reason.removeprefix(EVAL_PREFIX): n
            for reason, n in counts.items()
            if reason.startswith(EVAL_PREFIX)
        }
        for name, counts in held_out_rows(segments).items()
    }
    return {**plan.decontamination, "removed_rows": {n: c for n, c in removed.items() if c}}


def rejects_file(config: BuildConfig, rejected: Rejected) -> dict[str, str]:
    """Where this build's rejects file is, relative to the output folder (so the pair can
    move together), and its sha256: later commands find it there, and know it if it changed."""
    if not rejected.sha256:
        return {}
    where = os.path.relpath(os.path.abspath(config.rejects), os.path.abspath(config.out))
    return {"file": Path(where).as_posix(), "sha256": rejected.sha256}


def export_dataset(
    out: Path,
    segments: list[SegmentOutput],
    config: BuildConfig,
    results: StageResults,
    plan: HeldOutPlan | None = None,
    card_memo: Path | None = None,
    images: CardImages | None = None,
) -> dict[str, Any]:
    """The card and manifest of the dataset folder whose configs' files the ``segments``
    (``builder.export.segment``) wrote, in segment order, from the values the stages before
    it returned (``results``); ``card_memo``: see ``card.card_yaml``."""
    out.mkdir(parents=True, exist_ok=True)  # an input with no valid rows still gets a card
    schemas: dict[str, pa.Schema] = dict(OBJECTIVES)
    ingested, rejected = results.ingested, results.rejected
    schemas |= TABLES | (SESSION_TABLES if results.sessions is not None else {})
    schemas["splits"] = SPLIT_ASSIGNMENT
    exported = [
        ExportedConfig(
            name,
            schema,
            _total((s.rows.get(name, {}) for s in segments), SPLITS),
            "objective" if name in OBJECTIVES else "table",
            _files_by_split(name, segments),
        )
        for name, schema in schemas.items()
    ]
    manifest: dict[str, Any] = {
        "builder_version": builder_version(),
        "schema_version": SCHEMA_VERSION,
        "inputs": ingested.manifest_inputs(),
        "configs": {c.name: {"kind": c.kind, "rows": dict(c.rows)} for c in exported},
        "files": dict(sorted((p, d) for s in segments for p, d in s.files.items())),
        "rejects": {
            "total": rejected.total,
            "by_kind": dict(rejected.by_kind),
            **rejects_file(config, rejected),
        },
        "checks": {
            "episodes_by_kind": dict(ingested.episode_checks),
            "questions_by_kind": dict(ingested.question_checks),
        },
        "extra_fields": dict(ingested.extra_fields),
        "layouts": layout_counts(out, segments),
        "duplicate_keys": dict(ingested.duplicate_keys),
        "bounded_hook_values": ingested.bounded_hook_values,
        "training_exclusions": _total((s.excluded for s in segments), (*REASONS, *HOOK_ONLY)),
        "sessions": dict(results.sessions) if results.sessions is not None else None,
        "redaction": {
            "enabled": config.redaction_enabled,
            "by_kind": _total(s.redactions for s in segments),
        },
        "splits": {**split_section(config, segments), **(plan.splits if plan else {})},
        "held_out_rows": held_out_rows(segments),
        "decontamination": decontamination_section(plan, segments),
        "hashing": hashing_section(config.hash_precision),
        "options": {
            "strict": config.strict,
            "max_reject_ratio": config.max_reject_ratio,
            "dpo_max_pairs_per_episode": config.dpo_max_pairs_per_episode,
            "hook_value_limit": config.hook_value_limit,
            "hash_precision": config.hash_precision,
            "answer_tolerance": config.answer_tolerance,
            "max_output_chars": config.max_output_chars,
            "null_correct_trains": config.null_correct_trains,
            "parquet_max_rows_per_file": config.parquet_max_rows_per_file,
        },
        "card": card_settings(config.card),
    }
    manifest["round_trip"] = round_trip_section(out, manifest["files"], manifest["redaction"])
    if config.built_from:  # ``build --from``: the build or release its inputs came from
        manifest["built_from"] = dict(config.built_from)
    episode_count = ingested.rows.get("episodes", 0)
    # The YAML is Python (a YAML dump of every file's path) and the charts are mostly waiting
    # (row lengths counted in Polars, PNG compression in Pillow): one beside the other.
    with ThreadPoolExecutor(1, thread_name_prefix="card-yaml") as pool:
        yaml = pool.submit(card_yaml, exported, config.card, episode_count, card_memo)
        if images is not None:  # the card's charts (``images/*.png``), listed with the data
            memo = card_memo.parent / "card-images" if card_memo is not None else None
            counted = {path: c for s in segments for path, c in s.row_chars.items()}
            drawn = images.write(out, manifest, memo, counted)
            manifest["files"] = dict(sorted({**manifest["files"], **drawn}.items()))
        yaml_text = yaml.result()
    dataset = config.publish_repo or "path/to/dataset"  # never a local path: same card anywhere
    card = card_markdown(exported, config.card, manifest, episode_count, yaml_text, dataset, images)
    # the card declares the configs: publish refuses one edited after the build, as a data file
    manifest[CARD_DIGEST] = hashlib.sha256(card.encode("utf-8")).hexdigest()
    write_manifest(out, manifest)
    (out / CARD).write_bytes(card.encode("utf-8"))
    return manifest
