"""The one hashing module: question ids, value hashes, canonical JSON, normalized text.

The builder, the integrity checks, the sample generator and reward code all import these
functions, so a hash means the same thing everywhere.

``normalize_value`` maps a Python value to plain JSON data with a stated canonical form:

=====================================  ===================================================
input                                  canonical form
=====================================  ===================================================
None, bool, int, str                   unchanged
finite float                           unchanged (``1.0`` stays distinct from ``1``)
NaN (float, numpy, pandas NA/NaT)      ``None``
+inf / -inf                            the strings ``"Infinity"`` / ``"-Infinity"``
numpy / polars / pandas scalars        the equivalent Python scalar, then as above
numpy array                            nested lists (``tolist()``)
pandas / polars Series                 ``{"name": str | None, "values": [...]}``
pandas / polars DataFrame              ``{"columns": [...], "data": [[row], ...]}``
list, tuple                            list, items normalized
set, frozenset                         list sorted by each item's canonical JSON
dict (any mapping)                     dict with ``str`` keys, values normalized
datetime, date, time                   ISO-8601 string (``isoformat()``)
timedelta                              total seconds as float
Decimal                                its exact string (``str(d)``); NaN/inf as floats
bytes, bytearray                       lowercase hex string
=====================================  ===================================================

Anything else raises ``TypeError``: a silent ``str(x)`` would hash object addresses.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

HASH_LENGTH = 16
_WHITESPACE = re.compile(r"\s+")


def sha256_16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def question_id(question_text: str, hint: str | None) -> str:
    """``sha256(f"{question_text}|{hint or ''}")[:16]``, as the episode schema defines it."""
    return sha256_16(f"{question_text}|{hint or ''}")


def canonical_json(value: Any) -> str:
    """``json.dumps(normalize_value(value), sort_keys=True)`` with default separators.

    This exact text is what gets hashed and what the tables store, so the JSON string
    ``"1"`` and the number ``1`` keep different texts and different hashes.
    """
    return json.dumps(normalize_value(value), sort_keys=True)


def hash_canonical_json(text: str) -> str:
    """Hash of text already produced by ``canonical_json``."""
    return sha256_16(text)


def value_hash(value: Any) -> str:
    """``sha256(json.dumps(normalize_value(x), sort_keys=True))[:16]``."""
    return sha256_16(canonical_json(value))


def normalize_question_text(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed: the key that decides a question's split."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _float(x: float) -> float | str | None:
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def normalize_value(value: Any) -> Any:
    """Canonical plain-JSON form of ``value`` (see the module docstring for the table)."""
    if value is None or type(value) in (bool, int, str):
        return value
    # Subclasses (numpy.float64, numpy.str_, IntEnum, ...) become the plain Python type.
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, Mapping):
        return {str(k): normalize_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize_value(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [normalize_value(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        # pandas NaT is a datetime subclass whose isoformat() is "NaT": missing, like NaN.
        return None if type(value).__name__ == "NaTType" else value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else _float(float(value))
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return _normalize_foreign(value)


def _normalize_foreign(value: Any) -> Any:
    """numpy, pandas and polars values, recognised by module name so none is imported."""
    module = type(value).__module__.split(".")[0]
    name = type(value).__name__
    if module == "numpy":
        if hasattr(value, "tolist"):  # arrays and scalars alike
            return normalize_value(value.tolist())
    elif module == "pandas":
        if name == "DataFrame":
            return {
                "columns": [str(c) for c in value.columns],
                "data": normalize_value(value.to_numpy(dtype=object).tolist()),
            }
        if name == "Series":
            values = value.to_numpy(dtype=object).tolist()
            return {"name": _name(value.name), "values": normalize_value(values)}
        if name in {"NAType", "NaTType"}:
            return None
        if name == "Timestamp":
            return value.isoformat()
        if name == "Timedelta":
            return value.total_seconds()
    elif module == "polars":
        if name == "DataFrame":
            return {"columns": list(value.columns), "data": normalize_value(value.rows())}
        if name == "Series":
            return {"name": _name(value.name), "values": normalize_value(value.to_list())}
    raise TypeError(f"normalize_value: no canonical form for {module}.{name}")


def _name(name: Any) -> str | None:
    return None if name is None or name == "" else str(name)
