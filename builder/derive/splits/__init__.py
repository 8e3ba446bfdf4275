"""Splits: the ratios and salt, and the keyed hash of a normalized text that orders the
question groups (``assign``) and, with ``group_by = "question"``, is a question's split.

The text, not the question id, is hashed: the id includes the hint, and the same question
asked with two hints must not land in train and test. Which questions share a split, and how
earlier assignments are kept, is ``groups``, ``assign`` and ``previous``.

    u = int(sha256(f"{salt}\\x00{normalized_text}")[:16], 16) / 2**64
    split = train if u < r_train, validation if u < r_train + r_validation, else test
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import polars as pl

from builder.config import BuildConfig
from schemas.vocabulary import SPLITS


@dataclass(frozen=True)
class SplitConfig:
    train: float = 0.90
    validation: float = 0.05
    test: float = 0.05
    salt: str = "agent-traces/v1"

    def __post_init__(self) -> None:
        ratios = (self.train, self.validation, self.test)
        # Written so that NaN fails too (every comparison with NaN is false).
        if not all(r >= 0 for r in ratios) or not abs(sum(ratios) - 1.0) <= 1e-9:
            raise ValueError(f"split ratios must be >= 0 and sum to 1, got {ratios}")

    def shares(self) -> dict[str, float]:
        """Each split's expected share of the rows, by name."""
        return dict(zip(SPLITS, (self.train, self.validation, self.test), strict=True))

    @classmethod
    def of(cls, config: BuildConfig) -> SplitConfig:
        return cls(
            config.split_train, config.split_validation, config.split_test, config.split_salt
        )


def unit_interval(normalized_text: str, salt: str) -> float:
    digest = hashlib.sha256(f"{salt}\x00{normalized_text}".encode()).hexdigest()[:16]
    return int(digest, 16) / 2**64


def split_of(normalized_text: str, config: SplitConfig) -> str:
    u = unit_interval(normalized_text, config.salt)
    if u < config.train:
        return "train"
    return "validation" if u < config.train + config.validation else "test"


def assign_splits(keys: pl.DataFrame, config: SplitConfig) -> pl.DataFrame:
    """``keys`` has ``question_id`` and ``normalized_text``; returns them with ``split``.

    Hashing runs once per distinct text (questions, not rows), so it stays off the hot path.
    """
    texts = keys.get_column("normalized_text").unique().sort()
    table = pl.DataFrame(
        {
            "normalized_text": texts,
            "split": [split_of(t, config) for t in texts.to_list()],
        },
        schema={"normalized_text": pl.String, "split": pl.String},
    )
    return (
        keys.select("question_id", "normalized_text")
        .unique("question_id", keep="first", maintain_order=True)
        .join(table, on="normalized_text", how="left", maintain_order="left")
        .sort("question_id")
    )
