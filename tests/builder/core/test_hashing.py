"""Hashing: test vectors for question ids and value hashes, and every row of normalize_value's table."""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import json
import math
from decimal import Decimal

import numpy as np
import pandas as pd
import polars as pl
import pytest

from builder.hashing import (
    canonical_json,
    hash_canonical_json,
    normalize_question_text,
    normalize_value,
    question_id,
    value_hash,
)


def seed_question_id(text: str, hint: str | None) -> str:
    """The episode schema's definition, written out independently of the builder."""
    return hashlib.sha256(f"{text}|{hint or ''}".encode()).hexdigest()[:16]


def seed_value_hash(canonical: object) -> str:
    """``sha256(json.dumps(x, sort_keys=True))[:16]`` on an already-canonical value."""
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]


# ---------------------------------------------------------------- question ids


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("What is 2+2?", None),
        ("What is 2+2?", ""),
        ("Which city has the most rows?", "Use groupby"),
        ("Café – naïve?", "ünï"),
        ("", None),
        ("a|b", "c|d"),
    ],
)
def test_question_id_follows_the_seed_definition(text: str, hint: str | None) -> None:
    assert question_id(text, hint) == seed_question_id(text, hint)


def test_question_id_pinned_vectors() -> None:
    # Literals: a change of the id definition must break this test, not just move with it.
    assert question_id("What is 2+2?", None) == "c0591215f6e8d129"
    assert question_id("Which city has the most rows?", "Use groupby") == "fcc8a6b67f826c05"
    assert question_id("Café – naïve?", "ünï") == "c6b6346b78a7ad23"


def test_question_id_hint_none_and_empty_agree_but_a_hint_changes_the_id() -> None:
    assert question_id("Q", None) == question_id("Q", "")
    assert question_id("Q", "h") != question_id("Q", None)
    # The separator is part of the definition: moving text between the halves changes the id.
    assert question_id("a|b", None) != question_id("a", "b")
    assert len(question_id("Q", None)) == 16


# ---------------------------------------------------------------- value hashes


@pytest.mark.parametrize(
    "value",
    [1, "1", 1.0, True, None, [1, 2], {"b": 1, "a": [1.5, None]}, "é", -0.5, {"k": {}}, []],
)
def test_value_hash_follows_the_seed_definition_for_json_values(value: object) -> None:
    assert value_hash(value) == seed_value_hash(value)
    assert canonical_json(value) == json.dumps(value, sort_keys=True)
    assert hash_canonical_json(canonical_json(value)) == value_hash(value)


def test_value_hash_pinned_vectors() -> None:
    assert value_hash(1) == "6b86b273ff34fce1"
    assert value_hash("1") == "391552c099c101b1"
    assert value_hash(1.0) == "d0ff5974b6aa52cf"
    assert value_hash(True) == "b5bea41b6c623f7c"
    assert value_hash(None) == "74234e98afe7498f"
    assert value_hash([1, 2]) == "3a316d6d3226f84c"
    assert value_hash({"b": 1, "a": [1.5, None]}) == "ad3879169fd83895"
    assert value_hash("é") == "abc3932c9ec58f04"
    assert value_hash({"shape": [300, 4], "columns": ["a"]}) == "81cbf0fe699078e3"


def test_canonical_json_uses_default_separators_sorted_keys_and_ascii_escapes() -> None:
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'
    assert canonical_json("é") == '"\\u00e9"'
    assert canonical_json({"z": {"y": 1, "x": 2}}) == '{"z": {"x": 2, "y": 1}}'


def test_string_one_and_number_one_stay_distinct() -> None:
    assert canonical_json("1") == '"1"'
    assert canonical_json(1) == "1"
    assert value_hash("1") != value_hash(1)


def test_one_one_point_zero_and_true_are_three_values() -> None:
    texts = {canonical_json(1), canonical_json(1.0), canonical_json(True)}
    assert texts == {"1", "1.0", "true"}
    assert len({value_hash(1), value_hash(1.0), value_hash(True)}) == 3
    assert type(normalize_value(True)) is bool
    assert type(normalize_value(1.0)) is float


# ---------------------------------------------------------------- normalize_value, row by row

NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # None, bool, int, str unchanged; finite floats unchanged
        (None, None),
        (False, False),
        (-7, -7),
        (2**70, 2**70),
        ("text", "text"),
        (2.5, 2.5),
        # NaN and ±inf
        (NAN, None),
        (INF, "Infinity"),
        (-INF, "-Infinity"),
        ([1.0, NAN, -INF], [1.0, None, "-Infinity"]),
        # list, tuple
        ((1, (2, "3")), [1, [2, "3"]]),
        # dicts: str keys, values normalized, nested
        ({1: {2: (3,)}, "x": NAN}, {"1": {"2": [3]}, "x": None}),
        ({(1, 2): "t", None: 0}, {"(1, 2)": "t", "None": 0}),
        # datetimes
        (dt.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05"),
        (
            dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
            "2024-01-02T03:04:05.000006+00:00",
        ),
        (dt.date(2024, 1, 2), "2024-01-02"),
        (dt.time(13, 30), "13:30:00"),
        (dt.timedelta(minutes=1, milliseconds=500), 60.5),
        # Decimal: exact string; NaN/inf as floats
        (Decimal("1.10"), "1.10"),
        (Decimal("-0.000001"), "-0.000001"),
        (Decimal("NaN"), None),
        (Decimal("Infinity"), "Infinity"),
        (Decimal("-Infinity"), "-Infinity"),
        # bytes
        (b"\x00\xffA", "00ff41"),
        (bytearray(b"ab"), "6162"),
        (b"", ""),
    ],
    ids=repr,
)
def test_normalize_value_builtin_rows(value: object, expected: object) -> None:
    assert normalize_value(value) == expected
    # the canonical form is plain JSON: json.dumps must take it as is
    assert json.loads(json.dumps(normalize_value(value))) == expected


def test_decimal_keeps_its_exact_text() -> None:
    assert canonical_json(Decimal("1.10")) != canonical_json(Decimal("1.1"))
    assert canonical_json(Decimal("1.1")) != canonical_json(1.1)


def test_sets_are_sorted_by_canonical_json_so_order_does_not_matter() -> None:
    words = [f"w{i}" for i in range(50)]
    forward, backward = set(), set()
    for w in words:
        forward.add(w)
    for w in reversed(words):
        backward.add(w)
    assert normalize_value(forward) == sorted(words)
    assert value_hash(forward) == value_hash(backward) == value_hash(frozenset(words))
    # Mixed types sort by canonical JSON text: '"b"' < '1' < 'null'.
    assert normalize_value({None, 1, "b"}) == ["b", 1, None]
    # A list keeps its order; a set does not have one.
    assert value_hash([2, 1]) != value_hash([1, 2]) == value_hash({2, 1})


class Small(enum.IntEnum):
    ONE = 1


def test_numpy_scalars_become_python_scalars() -> None:
    cases = [
        (np.int64(3), 3, int),
        (np.uint8(255), 255, int),
        (np.float32(1.5), 1.5, float),
        (np.float64(2.0), 2.0, float),
        (np.bool_(True), True, bool),
        (np.str_("x"), "x", str),
        (Small.ONE, 1, int),
    ]
    for value, expected, kind in cases:
        out = normalize_value(value)
        assert out == expected and type(out) is kind, value
    assert canonical_json(np.int64(3)) == "3"
    assert canonical_json(np.float64(2.0)) == "2.0"
    assert canonical_json(np.bool_(False)) == "false"
    assert value_hash(np.int64(3)) == value_hash(3)


def test_numpy_nan_inf_and_datetimes() -> None:
    assert normalize_value(np.float64("nan")) is None
    assert normalize_value(np.float32("inf")) == "Infinity"
    assert normalize_value(np.float64("-inf")) == "-Infinity"
    assert normalize_value(np.datetime64("2024-01-02T03:04:05")) == "2024-01-02T03:04:05"
    assert normalize_value(np.datetime64("NaT")) is None
    assert normalize_value(np.timedelta64(90, "s")) == 90.0


def test_numpy_arrays_become_nested_lists() -> None:
    assert normalize_value(np.array([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]
    assert normalize_value(np.array([1.0, np.nan, np.inf])) == [1.0, None, "Infinity"]
    assert normalize_value(np.array([], dtype=float)) == []
    assert normalize_value(np.array(["a", "b"])) == ["a", "b"]
    assert canonical_json(np.arange(3)) == "[0, 1, 2]"


def test_pandas_series() -> None:
    named = pd.Series([1, 2, 3], name="price")
    assert normalize_value(named) == {"name": "price", "values": [1, 2, 3]}
    assert normalize_value(pd.Series([1.5, np.nan])) == {"name": None, "values": [1.5, None]}
    nullable = pd.Series([1, None], dtype="Int64", name=0)
    assert normalize_value(nullable) == {"name": "0", "values": [1, None]}
    times = pd.Series([pd.Timestamp("2024-01-01"), pd.NaT])
    assert normalize_value(times)["values"] == ["2024-01-01T00:00:00", None]


def test_pandas_dataframe() -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", None], "c": [0.5, np.nan]})
    assert normalize_value(frame) == {
        "columns": ["a", "b", "c"],
        "data": [[1, "x", 0.5], [2, None, None]],
    }
    assert normalize_value(pd.DataFrame({1: [True]})) == {"columns": ["1"], "data": [[True]]}
    dated = pd.DataFrame({"t": pd.to_datetime(["2024-01-01", None])})
    assert normalize_value(dated) == {"columns": ["t"], "data": [["2024-01-01T00:00:00"], [None]]}


def test_pandas_scalars() -> None:
    assert normalize_value(pd.NA) is None
    assert normalize_value(pd.NaT) is None
    assert normalize_value(pd.Timestamp("2024-01-02 03:04:05")) == "2024-01-02T03:04:05"
    assert normalize_value(pd.Timedelta(seconds=90)) == 90.0
    assert normalize_value([pd.NA, pd.NaT, np.nan]) == [None, None, None]


def test_polars_series_and_dataframe() -> None:
    assert normalize_value(pl.Series("s", [1, 2, None])) == {"name": "s", "values": [1, 2, None]}
    assert normalize_value(pl.Series([1.0, float("nan")])) == {"name": None, "values": [1.0, None]}
    frame = pl.DataFrame({"a": [1, 2], "b": [None, "y"]})
    assert normalize_value(frame) == {"columns": ["a", "b"], "data": [[1, None], [2, "y"]]}


def test_pandas_and_polars_frames_with_the_same_data_hash_alike() -> None:
    data = {"city": ["Oslo", "Lima"], "rows": [3, 5]}
    assert value_hash(pd.DataFrame(data)) == value_hash(pl.DataFrame(data))
    assert value_hash(pd.Series([1, 2], name="n")) == value_hash(pl.Series("n", [1, 2]))


class Opaque:
    pass


@pytest.mark.parametrize(
    "value",
    [object(), Opaque(), 1 + 2j, [1, object()], {"k": Opaque()}, pd.Categorical(["a"])],
    ids=["object", "class", "complex", "nested-in-list", "nested-in-dict", "pandas-other"],
)
def test_values_without_a_canonical_form_raise_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="no canonical form"):
        normalize_value(value)
    with pytest.raises(TypeError):
        value_hash(value)


def test_hash_of_nan_is_hash_of_null_as_documented() -> None:
    assert value_hash(float("nan")) == value_hash(None)
    assert math.isnan(float("nan"))  # the input itself is untouched


# ---------------------------------------------------------------- question text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  What   is\t2+2?\n", "what is 2+2?"),
        ("Stra\u00dfe", "strasse"),  # casefold, not lower
        ("\ufb01le", "file"),  # NFKC: ligature
        ("\uff21\uff22\uff23", "abc"),  # NFKC: full-width letters
        ("a\u00a0b\u2003c", "a b c"),  # NFKC turns no-break and em spaces into spaces
        ("Cafe\u0301", "caf\u00e9"),  # NFKC composes
        ("", ""),
    ],
)
def test_normalize_question_text(text: str, expected: str) -> None:
    assert normalize_question_text(text) == expected


def test_normalized_text_is_idempotent() -> None:
    once = normalize_question_text(" ＡＢ  \ufb01 Straße ")
    assert normalize_question_text(once) == once
