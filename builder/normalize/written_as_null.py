"""Values the capture side hashed before pydantic wrote them: ``model_dump_json`` writes NaN,
inf and -inf as ``null``, so a captured hash may be that of the value with its nulls read as
non-finite floats."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from builder.contract.hashing import canonical_json, rehash_json_text

# What a null in a captured value may have been when hashed: pydantic's ``model_dump_json``
# writes NaN, inf and -inf as null, as it writes None. Every mix is tried up to this many
# nulls; beyond, one reading for all of them (4 ** 4 = 256 hashes at most, on a mismatch
# only).
_HASHED_AS = (math.nan, math.inf, -math.inf, None)
MOST_MIXED_NULLS = 4


def hashed_before_written_as_null(text: str, captured: str, precision: int | None) -> bool:
    """Whether ``captured`` is the hash of the value of ``text`` with its nulls read as the
    non-finite floats they may have been. The capture code hashes a live answer, then writes
    its episode with pydantic's ``model_dump_json``: an answer such as a per-group std with a
    one-row group keeps the hash of its NaN, a coefficient of variation over a zero mean
    that of its inf. False when the value is nested past the recursion limit."""
    try:
        value = json.loads(text)
        nulls = _count_nulls(value)
        readings: Iterable[tuple[float | None, ...]] = (
            itertools.product(_HASHED_AS, repeat=nulls)
            if nulls <= MOST_MIXED_NULLS
            else ((x,) * nulls for x in _HASHED_AS)
        )
        return any(
            rehash_json_text(canonical_json(_read_nulls(value, iter(r))), precision) == captured
            for r in readings
        )
    except RecursionError:
        return False


def _count_nulls(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, list):
        return sum(_count_nulls(v) for v in value)
    if isinstance(value, dict):
        return sum(_count_nulls(v) for v in value.values())
    return 0


def _read_nulls(value: Any, floats: Iterator[float | None]) -> Any:
    """``value`` with its nulls, in order, read as the next of ``floats``."""
    if value is None:
        return next(floats)
    if isinstance(value, list):
        return [_read_nulls(v, floats) for v in value]
    if isinstance(value, dict):
        return {k: _read_nulls(v, floats) for k, v in value.items()}
    return value
