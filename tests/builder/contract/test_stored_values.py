"""summarize_value / hook_record: bounded stored forms, and hashes always of the full value."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.contract.hashing import canonical_json, normalize_value, value_hash
from builder.contract.stored_values import (
    DATAFRAME_BUDGET,
    LARGE_VALUE_BYTES,
    bound_stored_value,
    hook_record,
    summarize_value,
)
from schemas.episode import Hook

ROOT = Path(__file__).resolve().parents[3]


def seed_hash(x: object) -> str:
    """The episode schema's ``sha256(json.dumps(normalize_value(x), sort_keys=True))[:16]``."""
    text = json.dumps(normalize_value(x), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def size(value: object) -> int:
    return len(canonical_json(value).encode())


def sales_pandas() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "region": ["north", "south", "east", "west", "north"],
            "revenue": [10.0, 20.5, float("nan"), 40.0, 50.0],
            "units": [1, 2, 3, 4, 5],
            "ok": [True, False, True, True, False],
        }
    )


def sales_polars() -> pl.DataFrame:
    return pl.from_pandas(sales_pandas(), nan_to_null=True)


# ---------------------------------------------------------------- test vectors: hashes


SOURCES = {
    "pandas DataFrame": sales_pandas,
    "polars DataFrame": sales_polars,
    "pandas Series": lambda: pd.Series([3, 1, 2], name="units"),
    "polars Series": lambda: pl.Series("revenue", [1.5, None, 3.0]),
    "int": lambda: 42,
    "float": lambda: 54.3,
    "str": lambda: "north",
    "bool": lambda: True,
    "None": lambda: None,
    "numpy int": lambda: np.int64(7),
    "dict": lambda: {"a": [1, 2], "b": {"c": None}},
    "large list": lambda: list(range(30_000)),
}


@pytest.mark.parametrize("make", SOURCES.values(), ids=SOURCES.keys())
def test_the_stored_hash_is_the_source_values_hash_not_the_summarys(make) -> None:
    record = hook_record("x = f()", make(), "x")
    assert record["value_hash"] == value_hash(make()) == seed_hash(make())
    if record["value"] != normalize_value(make()):  # a summary stands in for the value
        assert record["value_hash"] != value_hash(record["value"])


def test_equal_values_in_different_python_types_hash_equally() -> None:
    assert hook_record("n", 3)["value_hash"] == hook_record("n", np.int64(3))["value_hash"]
    assert hook_record("xs", [1, 2])["value_hash"] == hook_record("xs", (1, 2))["value_hash"]
    assert value_hash(np.array([1, 2])) == value_hash([1, 2])
    assert value_hash(np.float64(2.5)) == value_hash(2.5)
    # polars frames take the pandas canonical forms (RangeIndex): list, dict or records
    assert value_hash(pd.DataFrame({"k": ["x"], "v": [1]})) == value_hash(
        pl.DataFrame({"k": ["x"], "v": [1]})
    )
    assert value_hash(pd.DataFrame({"a": [1, 2]})) == value_hash(pl.DataFrame({"a": [1, 2]}))
    assert value_hash(pd.Series([1, 2], name="a")) == value_hash(pl.Series("a", [1, 2]))


def test_different_json_types_do_not_hash_equally() -> None:
    assert hook_record("s", "1")["value_hash"] != hook_record("s", 1)["value_hash"]
    assert value_hash(1) != value_hash(1.0)
    assert value_hash(True) != value_hash(1)


# ---------------------------------------------------------------- DataFrames and Series


@pytest.mark.parametrize("make", [sales_pandas, sales_polars], ids=["pandas", "polars"])
def test_dataframe_summary(make) -> None:
    summary = summarize_value(make())
    assert summary["type"] == "DataFrame"
    assert summary["shape"] == [5, 4]
    assert summary["columns"] == ["region", "revenue", "units", "ok"]
    assert set(summary["dtypes"]) == set(summary["columns"])
    assert summary["head"] == [
        {"region": "north", "revenue": 10.0, "units": 1, "ok": True},
        {"region": "south", "revenue": 20.5, "units": 2, "ok": False},
        {"region": "east", "revenue": None, "units": 3, "ok": True},
    ]
    # numeric columns only (not strings, not booleans); missing values skipped
    assert summary["numeric_summary"] == {
        "revenue": {"mean": 30.125, "min": 10.0, "max": 50.0},
        "units": {"mean": 3.0, "min": 1, "max": 5},
    }
    assert "columns_omitted" not in summary
    assert summary == json.loads(canonical_json(summary))  # plain JSON already
    assert size(summary) <= DATAFRAME_BUDGET


def test_dataframe_summary_of_an_empty_frame() -> None:
    summary = summarize_value(pd.DataFrame({"x": pd.Series([], dtype="float64")}))
    assert summary["shape"] == [0, 1]
    assert summary["head"] == []
    assert summary["numeric_summary"] == {"x": {"mean": None, "min": None, "max": None}}


def test_a_wide_frame_with_long_text_stays_within_the_budget() -> None:
    wide = pd.DataFrame({f"column_{i:03d}_" + "x" * 80: ["y" * 500] * 5 for i in range(300)})
    summary = summarize_value(wide)
    assert summary["shape"] == [5, 300]
    assert size(summary) <= DATAFRAME_BUDGET
    assert summary["columns_omitted"] == 300 - len(summary["columns"])
    assert len(summary["columns"]) >= 1
    assert all(len(c) <= 64 and c.endswith("...") for c in summary["columns"])
    assert all(len(v) <= 64 for row in summary["head"] for v in row.values())


def test_a_cell_holding_a_container_becomes_type_and_size() -> None:
    frame = pl.DataFrame({"xs": [list(range(100)), [1]]})
    assert summarize_value(frame)["head"] == [{"xs": {"type": "list", "size": 100}}, {"xs": [1]}]


@pytest.mark.parametrize(
    "series",
    [pd.Series([4, 1, 7, 2], name="n"), pl.Series("n", [4, 1, 7, 2])],
    ids=["pandas", "polars"],
)
def test_series_summary(series) -> None:
    summary = summarize_value(series)
    assert {k: v for k, v in summary.items() if k != "dtype"} == {
        "type": "Series",
        "name": "n",
        "length": 4,
        "head": [4, 1, 7],
        "numeric_summary": {"mean": 3.5, "min": 1, "max": 7},
    }
    assert summary["dtype"].lower() == "int64"


def test_series_summary_of_text_is_bounded() -> None:
    series = pd.Series(["z" * 10_000] * 1000, name="n" * 300)
    summary = summarize_value(series)
    assert summary["numeric_summary"] is None
    assert summary["length"] == 1000
    assert size(summary) <= 512


@settings(max_examples=40, deadline=None)
@given(
    n_columns=st.integers(1, 60),
    n_rows=st.integers(0, 8),
    text=st.text(max_size=300),
    number=st.floats(allow_nan=True, allow_infinity=True),
)
def test_dataframe_summaries_are_bounded(n_columns, n_rows, text, number) -> None:
    data = {f"{text[:50]}{i}": [text if i % 2 else number] * n_rows for i in range(n_columns)}
    frame = pl.DataFrame(data, strict=False)
    summary = summarize_value(frame)
    assert size(summary) <= DATAFRAME_BUDGET
    assert summary["shape"] == [n_rows, n_columns]
    assert summarize_value(frame) == summary  # deterministic


# ---------------------------------------------------------------- containers and scalars


def test_large_containers_become_type_and_size() -> None:
    big = list(range(30_000))
    assert size(big) > LARGE_VALUE_BYTES
    assert summarize_value(big) == {"type": "list", "size": 30_000, "size_bytes": size(big)}
    assert summarize_value(tuple(big))["type"] == "tuple"
    assert summarize_value({str(i): i for i in range(20_000)})["type"] == "dict"
    assert summarize_value(np.arange(30_000))["type"] == "ndarray"


def test_containers_up_to_the_limit_are_stored_whole_in_canonical_form() -> None:
    assert summarize_value((1, np.int64(2), {"a": 1.5})) == [1, 2, {"a": 1.5}]
    # NaN stays NaN (the capture's canonical text keeps the token): not null
    assert canonical_json(summarize_value([float("nan")])) == "[NaN]"
    just = ["x" * (LARGE_VALUE_BYTES - 4)]  # '["' + text + '"]'
    assert size(just) == LARGE_VALUE_BYTES
    assert summarize_value(just) == just
    assert summarize_value([*just, 1])["type"] == "list"


@pytest.mark.parametrize("scalar", [0, -3, 2.5, "", "text" * 50_000, True, None])
def test_scalars_are_returned_as_they_are(scalar) -> None:
    assert summarize_value(scalar) is scalar


def test_nan_scalar_is_returned_as_it_is() -> None:
    assert math.isnan(summarize_value(float("nan")))


def test_other_values_take_their_canonical_form() -> None:
    assert summarize_value(np.int64(3)) == 3
    # the capture serialiser's str() fallback: no ISO "T", never an error
    assert summarize_value(pd.Timestamp("2025-01-02")) == "2025-01-02 00:00:00"
    assert summarize_value(object()).startswith("<object object at")


# ---------------------------------------------------------------- hook_record


def test_hook_record_is_a_valid_episode_hook() -> None:
    record = hook_record("df = pd.read_csv('s.csv')", sales_pandas(), "df", description="Raw sales")
    hook = Hook.model_validate(record)
    assert hook.value_hash == value_hash(sales_pandas())
    assert hook.value == summarize_value(sales_pandas())
    assert record["depends_on"] == []
    derived = hook_record("m = df.revenue.mean()", 30.125, "m", depends_on=("df",))
    assert derived["depends_on"] == ["df"]
    assert derived["value"] == 30.125


def test_bound_stored_value_keeps_small_text_and_bounds_large_text() -> None:
    assert bound_stored_value("[1, 2]", 10) == ("[1, 2]", False)
    text, bounded = bound_stored_value(canonical_json(list(range(100))), 50)
    assert bounded
    assert json.loads(text) == {"size_bytes": 390, "truncated": True, "type": "list"}


def test_capture_and_reward_modules_import_without_the_build_machinery() -> None:
    heavy = ["polars", "pyarrow", "datasets", "pandas", "numpy", "pydantic"]
    code = (
        "import sys, builder.contract.stored_values, builder.contract.rewards; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_single_column_over_the_budget_is_omitted_not_kept() -> None:
    # Found by the property above: 64 astral-plane characters are 768 bytes of canonical
    # JSON, and the name repeats in columns, dtypes, every head row and the numeric summary.
    name = "\U00010000" * 64
    summary = summarize_value(pl.DataFrame({name: [0.0, 0.0, 0.0]}))
    assert size(summary) <= DATAFRAME_BUDGET
    assert summary["columns"] == [] and summary["columns_omitted"] == 1
    assert summary["shape"] == [3, 1]
