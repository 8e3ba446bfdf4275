"""A hash the capture side took of a value that pydantic then wrote with ``null`` for each
NaN, inf and -inf (and None): every mix of readings up to four nulls, one for all beyond."""

from __future__ import annotations

import json
import math

import pytest

from builder.contract.hashing import canonical_json, value_hash
from builder.normalize.written_as_null import MOST_MIXED_NULLS, hashed_before_written_as_null


def _written(value: object) -> str:
    """The value as ``model_dump_json`` writes it: non-finite floats as null."""

    def nulled(v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, list):
            return [nulled(x) for x in v]
        if isinstance(v, dict):
            return {k: nulled(x) for k, x in v.items()}
        return v

    return canonical_json(json.loads(json.dumps(nulled(value))))


@pytest.mark.parametrize("precision", [None, 2])
@pytest.mark.parametrize(
    "value",
    [
        {"a": math.nan, "b": 1.5},
        {"cv": math.inf},
        [-math.inf, None, math.nan, 2.0],  # a mix, a genuine None among them
        {"x": [math.inf] * (MOST_MIXED_NULLS + 3)},  # beyond the mixes: one reading for all
    ],
)
def test_the_hash_of_the_live_value_holds(value: object, precision: int | None) -> None:
    assert hashed_before_written_as_null(_written(value), value_hash(value, precision), precision)


def test_another_value_s_hash_does_not() -> None:
    written = _written({"a": math.inf})
    assert not hashed_before_written_as_null(written, value_hash({"a": 1.0}), None)
    # beyond the mixes, a mix of readings is not tried
    mixed = [math.nan, math.inf] * MOST_MIXED_NULLS
    assert not hashed_before_written_as_null(_written(mixed), value_hash(mixed), None)
