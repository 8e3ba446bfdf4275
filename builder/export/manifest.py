"""``manifest.json``: what a build read, what it wrote, and what it refused, by kind.

Deterministic by construction (sorted keys, no clock), so it is byte-identical across
rebuilds of the same inputs and can be diffed between dataset versions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from builder.config import BuildConfig

MANIFEST_NAME = "manifest.json"


def builder_version() -> str:
    from builder import __version__

    return __version__


def assignment_digest(splits: pl.DataFrame) -> str:
    """sha256 over ``question_id<TAB>split`` lines in id order: one value to compare."""
    lines = splits.sort("question_id").select(
        pl.concat_str(["question_id", "split"], separator="\t")
    )
    text = "\n".join(lines.to_series().to_list())
    return hashlib.sha256(text.encode()).hexdigest()


def split_section(config: BuildConfig, splits: pl.DataFrame) -> dict[str, Any]:
    counts = splits.group_by("split").len().sort("split")
    return {
        "method": "sha256(salt \\x00 normalized question text) as a fraction of 2**64",
        "salt": config.split_salt,
        "ratios": {
            "train": config.split_train,
            "validation": config.split_validation,
            "test": config.split_test,
        },
        "questions_per_split": dict(zip(counts["split"], counts["len"], strict=True)),
        "assignment_sha256": assignment_digest(splits),
    }


def file_digests(folder: Path) -> dict[str, str]:
    """sha256 of every data file, so an edit after the build can be detected before publish."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*.parquet"))
    }


def write_manifest(out: Path, manifest: Mapping[str, Any]) -> None:
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n"
    (out / MANIFEST_NAME).write_text(text, encoding="utf-8")
