"""The local pool hands back what the function returned (its results travel pickled with
protocol 5) and raises what it raised, in item order."""

from __future__ import annotations

import operator

import pyarrow as pa
import pytest

from builder.engine import InlineEngine, LocalEngine
from builder.normalize.rows import to_table

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.list_(pa.float64()))])


def _items() -> list[tuple[list[tuple[object, ...]], pa.Schema]]:
    return [
        ([(i, "x" * i if i % 3 else None, [0.5] * (i % 4)) for i in range(n)], SCHEMA)
        for n in (0, 1, 7, 5000, 3)
    ]


def test_results_are_those_of_the_function_in_item_order() -> None:
    engine = LocalEngine(2)
    try:
        got = list(engine.map(to_table, _items()))
        assert list(engine.map(operator.add, [(1, 2), ("a", "b"), ((1,), (2,))])) == [
            3,
            "ab",
            (1, 2),
        ]
    finally:
        engine.close()
    expected = list(InlineEngine().map(to_table, _items()))
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert a.schema == b.schema and a.equals(b)


def test_an_error_of_the_function_is_raised() -> None:
    engine = LocalEngine(1)
    try:
        with pytest.raises(ZeroDivisionError):
            list(engine.map(operator.truediv, [(1, 1), (1, 0)]))
    finally:
        engine.close()
