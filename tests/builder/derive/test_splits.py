"""Splits: a keyed hash of the normalized question text, stable as data is added."""

from __future__ import annotations

import hashlib
import math
import random

import polars as pl
import pytest

from builder.contract.hashing import normalize_question_text, question_id
from builder.derive.splits import SPLITS, SplitConfig, assign_splits, split_of, unit_interval


def keys_frame(texts_and_hints: list[tuple[str, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "question_id": [question_id(t, h) for t, h in texts_and_hints],
            "normalized_text": [normalize_question_text(t) for t, _ in texts_and_hints],
        }
    )


def random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["mean", "rows", "price", "city", "max", "count", "sales", "per", "year", "of", "the"]
    return [" ".join(rng.choices(words, k=6)) + f" #{rng.getrandbits(48)}" for _ in range(n)]


def test_unit_interval_is_the_documented_keyed_hash() -> None:
    text, salt = "what is 2+2?", "agent-traces/v1"
    digest = hashlib.sha256(f"{salt}\x00{text}".encode()).hexdigest()[:16]
    assert unit_interval(text, salt) == int(digest, 16) / 2**64
    # pinned: a change of the formula or of the default salt moves test sets
    assert unit_interval(text, SplitConfig().salt) == 0.9922356103259196
    assert split_of(text, SplitConfig()) == "test"


def test_split_of_is_deterministic_and_salt_dependent() -> None:
    texts = random_texts(500, seed=1)
    config = SplitConfig()
    first = [split_of(t, config) for t in texts]
    assert first == [split_of(t, SplitConfig()) for t in texts]
    resalted = [split_of(t, SplitConfig(salt="other")) for t in texts]
    assert resalted != first
    assert set(first) <= set(SPLITS)


def test_boundaries_follow_the_ratios() -> None:
    config = SplitConfig(train=0.5, validation=0.25, test=0.25, salt="s")
    for text in random_texts(300, seed=2):
        u = unit_interval(text, "s")
        expected = "train" if u < 0.5 else "validation" if u < 0.75 else "test"
        assert split_of(text, config) == expected


def test_same_normalized_text_same_split_even_with_different_hints() -> None:
    pairs = []
    for text in random_texts(200, seed=3):
        pairs += [(text, None), (text, "a hint"), (f"  {text.upper()}\t", "another hint")]
    frame = keys_frame(pairs)
    assert frame["question_id"].n_unique() == len(pairs)  # the hint changes the id...
    out = assign_splits(frame, SplitConfig())
    assert out.height == len(pairs)
    per_text = out.group_by("normalized_text").agg(pl.col("split").n_unique().alias("n"))
    assert per_text["n"].max() == 1  # ...but never the split
    assert out["split"].null_count() == 0


def test_ratios_are_respected_within_binomial_noise() -> None:
    texts = random_texts(20_000, seed=4)
    config = SplitConfig(train=0.8, validation=0.1, test=0.1)
    counts = {s: 0 for s in SPLITS}
    for text in texts:
        counts[split_of(text, config)] += 1
    n = len(texts)
    for split, p in (("train", 0.8), ("validation", 0.1), ("test", 0.1)):
        sd = math.sqrt(n * p * (1 - p))
        assert abs(counts[split] - n * p) < 5 * sd, (split, counts)


def test_adding_questions_never_moves_existing_ones() -> None:
    old = [(t, None) for t in random_texts(1000, seed=5)]
    new = [(t, "h") for t in random_texts(1000, seed=6)] + [(old[0][0], "new hint")]
    before = assign_splits(keys_frame(old), SplitConfig())
    after = assign_splits(keys_frame(old + new), SplitConfig())
    joined = before.join(after, on="question_id", suffix="_after")
    assert joined.height == before.height
    assert (joined["split"] == joined["split_after"]).all()
    moved_twin = after.filter(pl.col("question_id") == question_id(old[0][0], "new hint"))
    assert (
        moved_twin["split"].item()
        == before["split"][before["question_id"].to_list().index(question_id(old[0][0], None))]
    )


def test_assign_splits_one_row_per_question_id() -> None:
    pairs = [("Q one", None), ("Q two", None)]
    frame = pl.concat([keys_frame(pairs), keys_frame(pairs)])
    out = assign_splits(frame, SplitConfig())
    assert out.columns == ["question_id", "normalized_text", "split"]
    assert out.height == 2
    assert out["question_id"].to_list() == sorted(out["question_id"].to_list())


def test_zero_ratio_split_gets_nothing() -> None:
    config = SplitConfig(train=0.7, validation=0.3, test=0.0)
    assert {split_of(t, config) for t in random_texts(2000, seed=7)} == {"train", "validation"}
    config = SplitConfig(train=0.5, validation=0.0, test=0.5)
    assert {split_of(t, config) for t in random_texts(2000, seed=8)} == {"train", "test"}


@pytest.mark.parametrize(
    "ratios",
    [
        (0.9, 0.05, 0.04),
        (0.9, 0.1, 0.1),
        (1.1, -0.05, -0.05),
        (-0.1, 0.6, 0.5),
        (float("nan"), 0.5, 0.5),
        (0.5, float("nan"), 0.5),
        (float("inf"), 0.0, 0.0),
    ],
)
def test_bad_ratios_raise(ratios: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError, match="split ratios"):
        SplitConfig(*ratios)


def test_good_ratios_are_accepted() -> None:
    SplitConfig(1.0, 0.0, 0.0)
    SplitConfig(0.7, 0.2, 0.1)  # sums to 0.9999999999999999 in floating point
