"""A problem's solution as steps: one line of pandas code each, the value it computes (a
scalar, or the bounded summary a hook stores for a DataFrame or Series) and what it prints.
Helpers here make the values a step shows plausible for its dataset."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any

from builder.contract.hashing import value_hash
from samples.datasets import DTYPES, Column, Dataset

EPOCH = datetime(2025, 10, 1, 8, 0, 0)


@dataclass(frozen=True)
class Step:
    """One line of a solution: an assignment (or bare expression) captured as a hook."""

    code: str
    var: str | None
    description: str | None
    deps: tuple[str, ...]
    value: Any  # what a hook stores: the scalar itself, or a bounded summary
    full: Any  # the value capture hashes (a stand-in when ``value`` is a summary)
    show: str | None  # a print() line following the code, if any
    out: str  # what the step prints
    reasoning: str

    @cached_property
    def hash(self) -> str:
        # Lazy: a template's dry run (to learn the question text) never pays for hashing.
        return value_hash(self.full)


_NO_FULL = object()


def make_step(
    code: str,
    var: str | None,
    description: str | None,
    deps: Sequence[str],
    value: Any,
    reasoning: str,
    *,
    full: Any = _NO_FULL,
    show: str | None = None,
    out: str | None = None,
) -> Step:
    """``full`` is the value the hash is computed on when ``value`` is only a summary."""
    full = value if full is _NO_FULL else full
    if show is None and var is not None:
        show = f"print({var})"
    if out is None:
        out = _display(value)
    return Step(code, var, description, tuple(deps), value, full, show, out, reasoning)


def _display(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def slug(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_")


def _cell(col: Column, rng: random.Random, allow_missing: bool = True) -> Any:
    if col.missing and allow_missing and rng.random() < 0.15:
        return None
    if col.kind == "cat":
        return rng.choice(col.levels)
    if col.kind == "float":
        return round(rng.uniform(col.low, col.high), 2)
    return rng.randint(int(col.low), int(col.high))


def typical(col: Column, rng: random.Random) -> float:
    span = col.high - col.low
    return round(rng.uniform(col.low + 0.2 * span, col.low + 0.6 * span), 2)


def _stats(col: Column, rng: random.Random) -> dict[str, float]:
    span = col.high - col.low
    low = col.low + rng.uniform(0.0, 0.05) * span
    high = col.high - rng.uniform(0.0, 0.05) * span
    if col.kind in ("int", "code"):
        low, high = round(low), round(high)
    else:
        low, high = round(low, 2), round(high, 2)
    return {
        "mean": round(rng.uniform(low + 0.25 * span, low + 0.55 * span), 2),
        "min": low,
        "max": high,
    }


def frame_value(
    ds: Dataset,
    rng: random.Random,
    rows: int,
    origin: str,
    *,
    columns: Sequence[Column] | None = None,
    fixed: dict[str, Any] | None = None,
    complete: Sequence[str] = (),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A DataFrame summary as capture stores it, and a stand-in for the full frame.

    The full frame is not generated; its hash stands on a description that differs
    whenever the frame would (source, shape and the code that derived it).
    """
    cols = list(columns or ds.columns)
    fixed = fixed or {}
    head = [
        {
            c.name: fixed[c.name] if c.name in fixed else _cell(c, rng, c.name not in complete)
            for c in cols
        }
        for _ in range(3)
    ]
    summary = {
        "type": "DataFrame",
        "shape": [rows, len(cols)],
        "columns": [c.name for c in cols],
        "dtypes": {c.name: DTYPES[c.kind] for c in cols},
        "head": head,
        "numeric_summary": {c.name: _stats(c, rng) for c in cols if c.kind != "cat"},
    }
    full = {
        "source": ds.file,
        "derived_by": origin,
        "shape": [rows, len(cols)],
        "columns": summary["columns"],
    }
    return summary, full


def series_value(
    name: str, index: Sequence[Any], values: Sequence[Any], dtype: str
) -> dict[str, Any]:
    """Small grouped results are stored whole; the full value is what normalize_value makes
    of a pandas Series (name and values; the index is not part of it)."""
    return {
        "type": "Series",
        "name": name,
        "dtype": dtype,
        "length": len(values),
        "index": list(index),
        "values": list(values),
    }


def series_out(
    index_name: str, index: Sequence[Any], values: Sequence[Any], name: str, dtype: str
) -> str:
    width = max(len(str(i)) for i in index)
    lines = [index_name] + [f"{i!s:<{width}}    {v}" for i, v in zip(index, values, strict=True)]
    return "\n".join([*lines, f"Name: {name}, dtype: {dtype}"])


def grouped_value(
    code: str,
    var: str,
    cat: Column,
    num: Column,
    values: Sequence[float],
    description: str,
    reasoning: str,
    source: str = "df",
) -> Step:
    value = series_value(num.name, cat.levels, values, "float64")
    return make_step(
        code,
        var,
        description,
        [source],
        value,
        reasoning,
        full={"name": num.name, "values": list(values)},
        out=series_out(cat.name, cat.levels, values, num.name, "float64"),
    )


@lru_cache(maxsize=64)
def load_step(ds: Dataset) -> Step:
    # One file always loads to the same frame, so every trace of every problem on it
    # carries the same load hook hash and summary.
    rng = random.Random(f"load:{ds.file}")
    code = f"df = pd.read_csv('{ds.file}')"
    summary, full = frame_value(ds, rng, ds.rows, code)
    return make_step(
        code,
        "df",
        f"Raw {ds.file} as loaded",
        [],
        summary,
        "Let me load the data and check its shape before anything else.",
        full=full,
        show="print(df.shape)",
        out=f"({ds.rows}, {len(ds.columns)})",
    )


@lru_cache(maxsize=64)
def inspect_step(ds: Dataset) -> Step | None:
    """A bare expression (no variable): its hook is named by its code line."""
    missing = [c for c in ds.columns if c.missing]
    if not missing:
        return None
    rng = random.Random(f"inspect:{ds.file}")
    col = missing[0]
    count = rng.randint(ds.rows // 50, ds.rows // 5)
    return make_step(
        f"df['{col.name}'].isna().sum()",
        None,
        None,
        ["df"],
        count,
        f"'{col.name}' may have gaps; count the missing values.",
        show=None,
    )


def other_than(rng: random.Random, options: Sequence[Any], not_this: Any) -> Any:
    return rng.choice([o for o in options if o != not_this])


def fuzz(x: float, rng: random.Random, scale: float) -> float:
    """An unrounded near-miss: what you get when you forget round()."""
    return x + (rng.uniform(0.1, 0.49) * scale) * rng.choice((-1, 1))


# (text, hint, alternative hint, difficulty, steps after the load, answer, wrong final steps)
Built = tuple[str, str, str, str, list[Step], Any, list[tuple[Step, Any]]]


def distinct_values(col: Column, r: random.Random, n: int) -> list[float]:
    values: list[float] = []
    while len(values) < n:
        v = typical(col, r)
        if v not in values:
            values.append(v)
    return values


def final_variants(
    steps: list[Step], wrong: list[tuple[str, list[str], Any]]
) -> list[tuple[Step, Any]]:
    final = steps[-1]
    return [
        (make_step(code, final.var, final.description, deps, ans, final.reasoning), ans)
        for code, deps, ans in wrong
    ]


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")
