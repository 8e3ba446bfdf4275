"""The split facts of the manifest, tallied a bucket at a time, equal those of the whole."""

from __future__ import annotations

import hashlib
import random

import polars as pl
import pytest

from builder.export.manifest import SplitTally


def assignment(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    ids = sorted({f"{rng.getrandbits(64):016x}" for _ in range(n)})
    splits = [rng.choice(["train", "train", "validation", "test"]) for _ in ids]
    return pl.DataFrame({"question_id": ids, "split": splits})


def test_tally_over_pieces_equals_the_whole() -> None:
    whole = assignment(1000, 1)
    lines = "\n".join(f"{q}\t{s}" for q, s in whole.iter_rows())
    tally = SplitTally()
    for start in (0, 10, 11, 500, 999):  # uneven pieces, one empty
        end = {0: 10, 10: 11, 11: 500, 500: 999, 999: 1000}[start]
        tally.add(whole.slice(start, end - start))
    tally.add(whole.clear())
    assert tally.sha256 == hashlib.sha256(lines.encode()).hexdigest()
    assert tally.counts == dict(whole.group_by("split").len().iter_rows())


def test_pieces_out_of_id_order_are_refused() -> None:
    whole = assignment(100, 2)
    tally = SplitTally()
    tally.add(whole.slice(50))
    with pytest.raises(ValueError, match="order"):
        tally.add(whole.slice(0, 50))
