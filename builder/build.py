"""The pipeline, data flowing one way: sources → validate → normalize → derive → export.

Everything is written into a work folder beside the output and swapped in at the very end,
so a failed build (too many rejects, a crash) leaves the previous dataset untouched.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from builder import export
from builder.config import BuildConfig
from builder.ingest import CHECK_FAILED, IngestResult, ingest_files
from builder.rejects import RejectsWriter
from builder.sources import expand_inputs
from builder.splits import SplitConfig, assign_splits
from schemas.tables import SPLIT_ASSIGNMENT, TABLES


class BuildFailed(RuntimeError):
    """The build was refused (e.g. too many rejects); the previous output is intact."""

    def __init__(self, message: str, strict_checks: bool = False) -> None:
        super().__init__(message)
        self.strict_checks = strict_checks


class BuildLocked(RuntimeError):
    """Another build into the same output folder is running."""


@dataclass
class BuildReport:
    manifest: dict[str, Any]
    seconds: float
    out: Path


def expanded(config: BuildConfig) -> BuildConfig:
    return replace(
        config,
        episodes=tuple(expand_inputs(config.episodes)),
        synthetic_questions=tuple(expand_inputs(config.synthetic_questions)),
        llm_questions=tuple(expand_inputs(config.llm_questions)),
    )


def split_config(config: BuildConfig) -> SplitConfig:
    return SplitConfig(
        config.split_train, config.split_validation, config.split_test, config.split_salt
    )


def _progress_bar(config: BuildConfig, enabled: bool) -> tqdm:
    paths = (*config.synthetic_questions, *config.llm_questions, *config.episodes)
    total = sum(os.path.getsize(p) for p in paths)
    return tqdm(total=total, unit="B", unit_scale=True, desc="reading", disable=not enabled)


def check_reject_ratio(config: BuildConfig, result: IngestResult, rejects: RejectsWriter) -> None:
    records, rejected = result.records, rejects.total
    ratio = rejected / records if records else 0.0
    if ratio > config.max_reject_ratio:
        raise BuildFailed(
            f"{rejected} of {records} records rejected ({ratio:.2%}), more than the allowed "
            f"{config.max_reject_ratio:.2%} (max_reject_ratio); see {config.rejects}",
            strict_checks=rejects.by_kind.get(CHECK_FAILED, 0) > 0,
        )


@contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """One build per output folder. The OS drops the lock when the process dies, even by
    SIGKILL, so a crashed build never blocks the next one."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildLocked(f"another build into {out} is running") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(config: BuildConfig, progress: bool = False) -> BuildReport:
    with output_lock(config.out):
        return _build(config, progress)


def _build(config: BuildConfig, progress: bool) -> BuildReport:
    started = time.perf_counter()
    config = expanded(config)
    out = config.out
    work = out.parent / f".{out.name}.work"
    shutil.rmtree(work, ignore_errors=True)
    rejects = RejectsWriter(config.rejects)
    try:
        with _progress_bar(config, progress) as bar:
            result, normalizer = ingest_files(config, work / "tables", rejects, bar.update)
        check_reject_ratio(config, result, rejects)
        tables = {name: pl.scan_parquet(work / "tables" / f"{name}.parquet") for name in TABLES}
        keys = tables["questions"].select("question_id", "normalized_text").collect()
        splits = assign_splits(keys, split_config(config))
        staged = work / "dataset"
        manifest = export.export_dataset(
            staged, tables, splits, SPLIT_ASSIGNMENT, config, result, normalizer, rejects
        )
        _swap(staged, out)
    finally:
        rejects.close()
        shutil.rmtree(work, ignore_errors=True)
    return BuildReport(manifest, time.perf_counter() - started, out)


def _swap(staged: Path, out: Path) -> None:
    """Replace ``out`` with ``staged``; the old folder is removed only once the new is there."""
    out.parent.mkdir(parents=True, exist_ok=True)
    old = out.parent / f".{out.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    staged.rename(out)
    shutil.rmtree(old, ignore_errors=True)
