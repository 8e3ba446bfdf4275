"""``manifest.json``: what a build read, what it wrote, and what it refused, by kind.

Deterministic by construction (sorted keys, no clock), so it is byte-identical across
rebuilds of the same inputs and can be diffed between dataset versions.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from builder.config import BuildConfig
from schemas.manifest import MANIFEST
from schemas.vocabulary import GROUP_BY_QUESTION


def builder_version() -> str:
    from builder import __version__

    return __version__


class SplitTally:
    """The manifest's facts about the split assignment, gathered a bucket at a time: rows
    per split, and a sha256 over ``question_id<TAB>split`` lines in id order (one value to
    compare two builds by). Buckets arrive in id order, each sorted by id."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._digest = hashlib.sha256()
        self._lines = 0
        self._last = ""

    def add(self, splits: pl.DataFrame) -> None:
        if not splits.height:
            return
        ids = splits.get_column("question_id")
        if not (ids.is_sorted() and ids[0] > self._last):
            raise ValueError("split assignment tallied out of question_id order")
        self._last = ids[-1]
        self.counts.update(dict(splits.group_by("split").len().iter_rows()))
        lines = splits.select(pl.concat_str(["question_id", "split"], separator="\t"))
        text = "\n".join(lines.to_series().to_list())
        self._digest.update((("\n" if self._lines else "") + text).encode())
        self._lines += splits.height

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()


def split_section(config: BuildConfig, segments: Sequence[Any]) -> dict[str, Any]:
    """``segments``: each with ``questions_per_split`` and ``assignment_sha256``."""
    counts: Counter[str] = Counter()
    for segment in segments:
        counts.update(segment.questions_per_split)
    lines = "\n".join(s.assignment_sha256 for s in segments if s.questions_per_split)
    return {
        "method": (
            "sha256(salt \\x00 normalized question text) as a fraction of 2**64"
            if config.split_group_by == GROUP_BY_QUESTION
            else "groups ordered by sha256(salt \\x00 smallest text) as a fraction of 2**64, "
            "walked with their rows against the ratios"
        ),
        "salt": config.split_salt,
        "ratios": {
            "train": config.split_train,
            "validation": config.split_validation,
            "test": config.split_test,
        },
        "questions_per_split": dict(sorted(counts.items())),
        # sha256 of each segment's sha256 of its question_id<TAB>split lines (in id order),
        # one per line, in segment order
        "assignment_sha256": hashlib.sha256(lines.encode()).hexdigest(),
    }


def write_manifest(out: Path, manifest: Mapping[str, Any]) -> None:
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n"
    (out / MANIFEST).write_text(text, encoding="utf-8")
