"""Bounded stored values: the capture policy for hook values, and its enforcement at build time.

Capture stores a hook's value next to its hash. The policy (``summarize_value``):

=====================================  ===================================================
value                                  stored as
=====================================  ===================================================
None, bool, int, float, str            the value itself (exact; strings are not cut)
pandas / polars DataFrame              a structured summary, about 1-2 KB at most
pandas / polars Series                 a structured summary, about 500 B at most
dict, list, tuple, set, numpy array    its canonical form when that is at most 100 KB of
                                       JSON, else ``{type, size, size_bytes}`` (~50 B)
anything else                          its canonical JSON read back (``numpy.int64(3)``
                                       → ``3``, datetime → ``"2025-01-01 12:30:00"``, ...;
                                       see ``builder.contract.hashing``)
=====================================  ===================================================

The hash is never of the stored form: ``value_hash`` is computed on the *original* value
(``builder.contract.hashing.value_hash(x)``), so a summary still verifies the full value it stands
for. ``hook_record`` builds a hook the way capture code should, both at once.

A value that reaches the builder larger than the limit anyway is replaced on ingest by
``bound_stored_value`` (type + size metadata, hash untouched) and counted in the manifest
as ``bounded_hook_values``, so one oversized hook cannot bloat every shard.

This module imports only the standard library and ``builder.contract.hashing``: capture code can use
it without the build machinery. pandas and polars objects are recognised by module name,
never imported here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from builder.contract.hashing import canonical_json, hash_canonical_json, value_hash

LARGE_VALUE_BYTES = 100_000  # containers whose canonical JSON is larger become {type, size}
HEAD_ROWS = 3  # rows (DataFrame) or values (Series) shown in ``head``
MAX_COLUMNS = 20  # DataFrame columns described, at most
MAX_TEXT = 64  # characters kept of a string (cell, column name, Series name, dtype)
DATAFRAME_BUDGET = 2048  # bytes of canonical JSON a DataFrame summary may take
ELLIPSIS = "..."


def summarize_value(x: Any) -> Any:
    """The bounded form of a hook value that capture stores (the hash is over ``x`` itself).

    DataFrame (pandas or polars) → ``{"type": "DataFrame", "shape": [rows, cols], "columns",
    "dtypes": {col: dtype}, "head": first 3 rows as {col: value}, "numeric_summary":
    {col: {"mean", "min", "max"}}}`` for the numeric (int, unsigned, float) columns. Only
    the first 20 columns are described, and fewer when needed to keep the summary within
    2 KB; ``"columns_omitted": n`` then says how many were left out (``shape`` stays
    exact). Strings longer than 64 characters are cut (ending in ``...``), and a cell
    holding a container longer than that becomes ``{"type", "size"}``.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"dry": [True, False], "temp": [3.5, 18.0]})
    >>> summarize_value(frame)  # doctest: +NORMALIZE_WHITESPACE
    {'type': 'DataFrame', 'shape': [2, 2], 'columns': ['dry', 'temp'],
     'dtypes': {'dry': 'bool', 'temp': 'float64'},
     'head': [{'dry': True, 'temp': 3.5}, {'dry': False, 'temp': 18.0}],
     'numeric_summary': {'temp': {'mean': 10.75, 'min': 3.5, 'max': 18.0}}}

    Series (pandas or polars) → ``{"type": "Series", "name", "dtype", "length", "head":
    first 3 values, "numeric_summary": {"mean", "min", "max"} or None}``:

    >>> import polars as pl
    >>> summarize_value(pl.Series("n", [4, 1, 7, 2]))  # doctest: +NORMALIZE_WHITESPACE
    {'type': 'Series', 'name': 'n', 'dtype': 'Int64', 'length': 4, 'head': [4, 1, 7],
     'numeric_summary': {'mean': 3.5, 'min': 1, 'max': 7}}

    Containers are stored whole (in canonical form) up to 100 KB of JSON, else as
    ``{"type": type name, "size": number of items, "size_bytes": bytes of JSON}``:

    >>> summarize_value((1, 2))
    [1, 2]
    >>> summarize_value(list(range(30_000)))
    {'type': 'list', 'size': 30000, 'size_bytes': 198890}

    Scalars are returned as they are:

    >>> summarize_value(54.3), summarize_value("total")
    (54.3, 'total')
    """
    return _summarize(x, None)


def hook_record(
    code_line: str,
    value: Any,
    variable_name: str | None = None,
    depends_on: Iterable[str] = (),
    description: str | None = None,
) -> dict[str, Any]:
    """A hook as capture code should write it: ``value`` is ``summarize_value(value)`` and
    ``value_hash`` is ``value_hash(value)`` of the full original value.

    >>> hook_record("n = len(df)", 3, "n", depends_on=["df"])  # doctest: +NORMALIZE_WHITESPACE
    {'code_line': 'n = len(df)', 'variable_name': 'n', 'value_hash': '4e07408562bedb8b',
     'description': None, 'depends_on': ['df'], 'value': 3}
    """
    if _is_container(value):
        # One canonical text serves the hash and the size decision.
        text = canonical_json(value)
        digest, stored = hash_canonical_json(text), _summarize(value, text)
    else:
        digest, stored = value_hash(value), _summarize(value, None)
    return {
        "code_line": code_line,
        "variable_name": variable_name,
        "value_hash": digest,
        "description": description,
        "depends_on": list(depends_on),
        "value": stored,
    }


def bound_stored_value(text: str, limit: int) -> tuple[str, bool]:
    """``(text, False)`` when within ``limit`` bytes, else ``(metadata JSON, True)``."""
    size = len(text.encode("utf-8"))
    if size <= limit:
        return text, False
    kind = {"{": "dict", "[": "list", '"': "str"}.get(text[:1], "scalar")
    return json.dumps({"size_bytes": size, "truncated": True, "type": kind}, sort_keys=True), True


# --------------------------------------------------------------------------- internals


def _kind(x: Any) -> tuple[str, str]:
    return type(x).__module__.split(".")[0], type(x).__name__


def _is_container(x: Any) -> bool:
    if isinstance(x, str | bytes | bytearray):
        return False
    module, name = _kind(x)
    return isinstance(x, Mapping | list | tuple | set | frozenset) or (
        module == "numpy" and name == "ndarray"
    )


def _summarize(x: Any, text: str | None) -> Any:
    if x is None or isinstance(x, bool | int | float | str):
        return x
    module, name = _kind(x)
    if module in ("pandas", "polars") and name == "DataFrame":
        return _dataframe(x, module)
    if module in ("pandas", "polars") and name == "Series":
        return _series(x, module)
    if _is_container(x):
        text = canonical_json(x) if text is None else text
        size = len(text.encode("utf-8"))
        if size > LARGE_VALUE_BYTES:
            return {"type": name, "size": len(x), "size_bytes": size}
        return json.loads(text)
    return _plain(x)


def _plain(x: Any) -> Any:
    """Plain JSON data of ``x``: its canonical JSON (the capture's forms) read back."""
    return json.loads(canonical_json(x))


def _shown(x: Any) -> Any:
    """A cell or statistic as a summary shows it: NaN and ±inf (missing cells, stats of
    empty columns) as ``None``, so summaries stay strict JSON."""
    value = _plain(x)
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _clip(value: Any) -> Any:
    """A normalized value cut to ``MAX_TEXT``: long strings end in ``...``, long containers
    become ``{"type", "size"}``."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - len(ELLIPSIS)] + ELLIPSIS
    if isinstance(value, list | dict) and len(json.dumps(value, sort_keys=True)) > MAX_TEXT:
        return {"type": type(value).__name__, "size": len(value)}
    return value


def _is_numeric(dtype: Any, module: str) -> bool:
    if module == "polars":
        return bool(dtype.is_numeric())
    return getattr(dtype, "kind", None) in ("i", "u", "f")  # numpy and pandas extension dtypes


def _stats(series: Any) -> dict[str, Any]:
    return {
        "mean": _shown(series.mean()),
        "min": _shown(series.min()),
        "max": _shown(series.max()),
    }


def _head(series: Any, module: str) -> list[Any]:
    """The first ``HEAD_ROWS`` values, each normalized and clipped."""
    if module == "polars":
        values = series.head(HEAD_ROWS).to_list()
    else:
        values = series.iloc[:HEAD_ROWS].to_numpy(dtype=object).tolist()
    return [_clip(_shown(v)) for v in values]


def _columns(frame: Any, module: str) -> list[tuple[str, Any]]:
    """(name, column Series) in order; positional so duplicate pandas names survive."""
    if module == "polars":
        return [(name, frame.to_series(i)) for i, name in enumerate(frame.columns)]
    return [(str(name), frame.iloc[:, i]) for i, name in enumerate(frame.columns)]


def _dataframe(frame: Any, module: str) -> dict[str, Any]:
    rows, n_columns = frame.shape
    described: list[tuple[str, Any]] = []
    for name, series in _columns(frame, module)[:MAX_COLUMNS]:
        head = _head(series, module)
        numeric = _stats(series) if _is_numeric(series.dtype, module) else None
        described.append((_clip(name), (_clip(str(series.dtype)), head, numeric)))
    shown = len(described)
    while True:
        summary = _frame_summary(rows, n_columns, described[:shown])
        # Down to no column at all: one column's name, repeated in every part of the summary,
        # can alone exceed the budget (64 astral-plane characters are 768 bytes of JSON).
        if shown == 0 or len(canonical_json(summary).encode("utf-8")) <= DATAFRAME_BUDGET:
            return summary
        shown //= 2


def _frame_summary(
    rows: int, n_columns: int, described: Sequence[tuple[str, tuple[str, list, Any]]]
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "type": "DataFrame",
        "shape": [rows, n_columns],
        "columns": [name for name, _ in described],
        "dtypes": {name: dtype for name, (dtype, _, _) in described},
        "head": [
            {name: head[i] for name, (_, head, _) in described} for i in range(min(rows, HEAD_ROWS))
        ],
        "numeric_summary": {
            name: numeric for name, (_, _, numeric) in described if numeric is not None
        },
    }
    if len(described) < n_columns:
        summary["columns_omitted"] = n_columns - len(described)
    return summary


def _series(series: Any, module: str) -> dict[str, Any]:
    name = series.name
    return {
        "type": "Series",
        "name": None if name is None or name == "" else _clip(str(name)),
        "dtype": _clip(str(series.dtype)),
        "length": len(series),
        "head": _head(series, module),
        "numeric_summary": _stats(series) if _is_numeric(series.dtype, module) else None,
    }
