"""The stored text of decoded values: exactly ``json.dumps(value, sort_keys=True)``."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from builder.contract.hashing import canonical_json
from builder.normalize.values import decoded_json, record_json

AWKWARD: list[Any] = [
    1e16,
    0.1,
    -0.0,
    float("nan"),
    float("inf"),
    -float("inf"),
    2**70,
    -(2**64),
    'é€😀\ud800\n"\\',
    {"b": 1, "a": [1.5, None, True, {"é": "x", "A": {}}]},
    [[[]]],
    {},
    "",
    None,
    False,
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    if depth > 3 or rng.random() < 0.4:
        return rng.choice(
            [*AWKWARD[:9], rng.random() * 10 ** rng.randint(-30, 30), rng.randint(-(2**80), 2**80)]
        )
    if rng.random() < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "B", "é", "\ud83d", "z z"]): _value(rng, depth + 1) for _ in range(3)}


def test_decoded_json_is_the_stdlib_text() -> None:
    rng = random.Random(3)
    for value in AWKWARD + [_value(rng) for _ in range(2000)]:
        assert decoded_json(value) == json.dumps(value, sort_keys=True)


def test_decoded_json_refuses_what_the_stdlib_refuses() -> None:
    deep: Any = []
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        json.dumps(deep, sort_keys=True)
    with pytest.raises(RecursionError):
        decoded_json(deep)
    with pytest.raises(TypeError):
        decoded_json({"a": {1, 2}})
    assert decoded_json([{"x": 1}] * 3) == json.dumps([{"x": 1}] * 3, sort_keys=True)


class _Text(str):
    pass


def _foreign() -> list[Any]:
    """Values a record built in code may hold: numpy scalars (top level and nested), a set,
    a datetime, a str subclass, mixed and non-str keys."""
    import datetime

    import numpy as np

    return [
        np.float64(0.1),
        np.float32(0.1),
        np.int64(3),
        np.bool_(True),
        np.str_("é"),
        [np.float64(2.5), np.int64(1)],
        {"a": np.float32(1.5)},
        {1: "x", 2: [None]},
        {1: "x", "1": "y"},
        {"a": {1, 2}},
        datetime.datetime(2025, 1, 2, 3, 4, 5),
        _Text("x\u2028"),
        {_Text("k"): 1},
    ]


def _outcome(write: Any, value: Any) -> tuple[str, str]:
    try:
        return "text", write(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return "raises", type(exc).__name__


def test_record_json_is_canonical_json() -> None:
    rng = random.Random(5)
    deep: Any = []
    for _ in range(10_000):
        deep = [deep]
    for value in AWKWARD + [_value(rng) for _ in range(2000)] + _foreign() + [deep]:
        assert _outcome(record_json, value) == _outcome(canonical_json, value), repr(value)[:80]
