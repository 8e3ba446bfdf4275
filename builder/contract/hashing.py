"""The one hashing module: question ids, value hashes, canonical JSON, normalized text.

The builder, the integrity checks, ``prm_stepwise`` labels, value summaries and the reward
functions all import these functions, so a hash means the same thing everywhere — and the
same thing as on the capture side, which hashed every value in real episode files (the
contract: ``capture-contract.md``, summarized here).

``value_hash(x, precision=None)`` is ``sha256(canonical_json(x, precision))[:16]`` where
``canonical_json`` is ``json.dumps(normalize_value(x), sort_keys=True, default=fallback)``
with Python's defaults (``ensure_ascii``, separators ``", "``/``": "``, NaN and ±inf as the
bare tokens ``NaN``/``Infinity``/``-Infinity``).

``normalize_value`` (the capture side's canonical forms):

=====================================  ===================================================
input                                  canonical form
=====================================  ===================================================
None                                   None
pandas DataFrame, empty                ``{}``
pandas DataFrame 1×1                   its single cell
pandas DataFrame, one column           the column as a list (``RangeIndex``), else a dict
                                       index → value
pandas DataFrame, two columns          dict first column → second column
pandas DataFrame, more columns         ``to_dict("records")``: a list of row dicts
pandas Series                          size 1: its value; labelled index: dict index →
                                       value; ``RangeIndex``: a list
numpy scalar                           ``.item()``
polars DataFrame / Series              as the pandas ones with a ``RangeIndex`` (a choice:
                                       the capture side never sees polars, and ``str()`` of
                                       a polars frame depends on display settings)
anything else                          unchanged
=====================================  ===================================================

The serialiser's fallback turns numpy integers and floats (and, in the rounded scheme,
numpy bools) into Python ones, numpy arrays into lists, and **anything else into
``str(x)``**: a ``datetime`` hashes as ``"2025-01-01 12:30:00"``, a ``Decimal`` as its
string, ``bytes`` as ``"b'...'"``, a set as ``"{1, 2}"`` — exactly what the capture side
does with them, so a value it can hash never raises here. (``str`` of a set of strings
follows ``PYTHONHASHSEED``, on the capture side too: such hashes are not reproducible.)

Two schemes exist in the wild. ``precision=None`` is the seeds' *exact* scheme.
``precision=n`` is the capture contract package's *rounded* scheme: every Python float
(``numpy.float64`` included) in the normalized structure is ``round(x, n)`` before
serialising; the capture side uses 2.

Texts decoded from episode lines may hold ``NaN``/``Infinity`` (Python's ``json`` writes
them): ``canonical_json`` keeps those tokens, so the text stored in the tables hashes to the
capture's hash, and a NaN answer is not ``null``.

Nothing here imports numpy or pandas: a value of theirs arrives with its module loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import re
import sys
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schemas.vocabulary import INVISIBLE_CHARACTERS

HASH_LENGTH = 16
_WHITESPACE = re.compile(r"\s+")
_INVISIBLE = re.compile(f"[{INVISIBLE_CHARACTERS}]+")


def sha256_16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def question_id(question_text: str, hint: str | None) -> str:
    """``sha256(f"{question_text}|{hint or ''}")[:16]``, as the episode schema defines it."""
    return sha256_16(f"{question_text}|{hint or ''}")


def canonical_json(value: Any, precision: int | None = None) -> str:
    """The text the capture side hashes: ``json.dumps(normalize_value(value),
    sort_keys=True, default=fallback)``, floats rounded first when ``precision`` is set.

    This exact text is also what the tables store, so the JSON string ``"1"`` and the number
    ``1`` keep different texts and different hashes.
    """
    normalized = normalize_value(value)
    if precision is not None:
        normalized = round_floats(normalized, precision)
    fallback = _fallback_exact if precision is None else _fallback_rounded
    return json.dumps(normalized, sort_keys=True, default=fallback)


def hash_canonical_json(text: str) -> str:
    """Hash of text already produced by ``canonical_json``."""
    return sha256_16(text)


def value_hash(value: Any, precision: int | None = None) -> str:
    """``sha256(canonical_json(value, precision))[:16]``: ``None`` is the exact scheme, an
    int the rounded one."""
    return sha256_16(canonical_json(value, precision))


# A live answer reaches its hash through the capture side's ``submit()``: the sandbox prints
# ``json.dumps(normalize_value(answer), default=fallback)`` (keys not sorted) and the host
# hashes what it reads back. That text is not the one ``value_hash`` hashes when the round
# trip changes the value: integer keys become strings (and sort as strings), a nested
# ``numpy.float32`` becomes a Python float (which the rounded scheme then rounds). A hook is
# hashed in the sandbox itself, from the live value (``value_hash``).
EXACT, ROUNDED = "exact", "rounded"


@dataclass(frozen=True)
class Submitted:
    """An answer as the capture side's ``submit()`` writes it, for an answer computed in
    another process: ``forms`` maps each scheme (``EXACT``, ``ROUNDED``) to the JSON texts
    it may have sent (``submitted_forms``). ``answer_hashes`` takes it as a live value."""

    forms: Mapping[str, tuple[str, ...]]

    @property
    def value(self) -> Any:
        """The answer as the capture side's host reads it (the rounded scheme's form)."""
        texts = self.forms.get(ROUNDED) or self.forms.get(EXACT) or ()
        return json.loads(texts[0]) if texts else None


def submitted_forms(value: Any) -> dict[str, tuple[str, ...]]:
    """The JSON texts the capture side's ``submit(value)`` sent, by scheme. A scheme holds
    none when ``submit`` raises there (a key JSON cannot write), two for a pandas Series of
    several values with a ``RangeIndex`` in the exact scheme (the seeds' capture code wrote
    every such Series as a dict index → value until 2025-12-27, a list after)."""
    return {scheme: _submitted_texts(value, scheme) for scheme in (EXACT, ROUNDED)}


def submitted_values(value: Any, precision: int | None = None) -> list[Any]:
    """The live answer ``value`` (or a ``Submitted``) as the capture side's host reads it
    back, once per form ``submit`` sends under the scheme of ``precision``; empty when
    ``submit`` raises."""
    scheme = EXACT if precision is None else ROUNDED
    if isinstance(value, Submitted):
        texts = value.forms.get(scheme, ())
    else:
        texts = _submitted_texts(value, scheme)
    read = []
    for text in texts:
        try:
            read.append(json.loads(text))
        except (ValueError, RecursionError):
            continue
    return read


def answer_hashes(value: Any, precision: int | None = None) -> frozenset[str]:
    """Every ``final_answer_hash`` the capture side may have recorded for the live answer
    ``value`` (or a ``Submitted``) under the scheme of ``precision``: the hash of each form
    ``submit`` sends, as read back by the host. Empty when ``submit`` raises."""
    hashes = set()
    for read in submitted_values(value, precision):
        try:
            hashes.add(value_hash(read, precision))
        except (TypeError, ValueError, RecursionError):
            continue
    return frozenset(hashes)


def hook_hashes(value: Any, precision: int | None = None) -> frozenset[str]:
    """Every ``value_hash`` the capture side's ``hook(value, ...)`` may have recorded, under
    the scheme of ``precision``; empty when ``hook`` raises (keys that cannot be sorted)."""
    try:
        hashes = {value_hash(value, precision)}
    except (TypeError, ValueError, RecursionError):
        return frozenset()
    if precision is None and _seeds_series(value):
        with contextlib.suppress(TypeError, ValueError, RecursionError):
            hashes.add(value_hash(value.to_dict()))
    return frozenset(hashes)


def _submitted_texts(value: Any, scheme: str) -> tuple[str, ...]:
    fallback = _fallback_exact if scheme == EXACT else _fallback_rounded
    forms = [normalize_value(value)]
    if scheme == EXACT and _seeds_series(value):
        forms.append(value.to_dict())
    texts: list[str] = []
    for form in forms:
        try:
            texts.append(json.dumps(form, default=fallback))
        except (TypeError, ValueError, RecursionError):
            continue
    return tuple(dict.fromkeys(texts))


def _seeds_series(value: Any) -> bool:
    """A pandas Series the seeds' capture code wrote as a dict where it now writes a list."""
    return (
        _foreign_kind(type(value)) == "pandas.Series"
        and value.size != 1
        and not _pandas_labelled(value)
    )


def rehash_json_text(text: str, precision: int | None) -> str:
    """The hash of a value stored as canonical JSON text, under either scheme: the exact
    scheme hashes the text itself; the rounded one re-reads it and rounds its floats."""
    if precision is None:
        return sha256_16(text)
    return value_hash(json.loads(text), precision)


def pickle_hash(value: Any) -> str | None:
    """The answer hash of the capture code's first scheme, before its JSON one (it changed on
    2025-12-21): ``sha256(pickle.dumps(value, protocol=4))[:16]``, here of the value as read
    from the line (plain JSON data pickles as it did on the capture side). Only for
    recognising such hashes: a pickle depends on Python types and on a dict's key order, so
    reward code cannot reproduce it from a student's live value. None when it does not
    pickle."""
    try:
        return hashlib.sha256(pickle.dumps(value, protocol=4)).hexdigest()[:HASH_LENGTH]
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError):
        return None


def normalize_question_text(text: str) -> str:
    """Invisible characters dropped, NFKC, casefolded, whitespace collapsed: the key that
    decides a question's split (a soft hyphen or zero-width space a copy kept or lost must not
    make it another question)."""
    visible = _INVISIBLE.sub("", text)
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", visible).casefold()).strip()


def round_floats(value: Any, precision: int) -> Any:
    """Every float (subclasses included) rounded, through dicts, lists and tuples."""
    if isinstance(value, float):
        return round(value, precision)
    if isinstance(value, dict):
        return {k: round_floats(v, precision) for k, v in value.items()}
    if isinstance(value, list | tuple):
        rounded = [round_floats(v, precision) for v in value]
        return tuple(rounded) if isinstance(value, tuple) else rounded
    return value


def normalize_value(value: Any) -> Any:
    """The capture side's canonical form of ``value`` (table: module docstring)."""
    if value is None:
        return None
    kind = _foreign_kind(type(value))
    if kind is None:
        return value
    if kind == "pandas.DataFrame":
        return _frame(value, value.shape, _pandas_column, _pandas_labelled(value))
    if kind == "pandas.Series":
        if value.size == 1:
            return value.iloc[0]
        return value.to_dict() if _pandas_labelled(value) else value.tolist()
    if kind == "numpy.generic":
        return value.item()
    if kind == "polars.DataFrame":
        return _frame(value, value.shape, _polars_column, labelled=False)
    if kind == "polars.Series":
        return value.item() if value.len() == 1 else value.to_list()
    return value


def _foreign_kind(cls: type) -> str | None:
    """Which of the recognised pandas/numpy/polars types ``cls`` is (subclasses count),
    found without importing any of them."""
    if cls.__module__ in ("builtins", "datetime", "decimal"):
        return None
    numpy = sys.modules.get("numpy")
    if numpy is not None and issubclass(cls, numpy.generic):
        return "numpy.generic"
    for base in cls.__mro__:
        root = base.__module__.split(".")[0]
        if root in ("pandas", "polars") and base.__name__ in ("DataFrame", "Series"):
            return f"{root}.{base.__name__}"
    return None


def _frame(frame: Any, shape: tuple[int, int], column: Any, labelled: bool) -> Any:
    rows, width = shape
    if rows == 0 or width == 0:
        return {}
    if shape == (1, 1):
        return column(frame, 0, scalar=True)
    if width == 1:
        if labelled:
            return frame.iloc[:, 0].to_dict()
        return column(frame, 0)
    if width == 2:
        return dict(zip(column(frame, 0), column(frame, 1), strict=True))
    if hasattr(frame, "to_dicts"):
        return frame.to_dicts()
    return frame.to_dict("records")


def _pandas_column(frame: Any, i: int, scalar: bool = False) -> Any:
    return frame.iloc[0, 0] if scalar else frame.iloc[:, i].tolist()


def _polars_column(frame: Any, i: int, scalar: bool = False) -> Any:
    return frame.item() if scalar else frame.to_series(i).to_list()


def _pandas_labelled(value: Any) -> bool:
    return type(value.index).__name__ != "RangeIndex"


def _fallback_exact(value: Any) -> Any:
    """The seeds' serialiser fallback: numpy integers and floats to Python, arrays to
    lists, anything else (numpy bools included, as the seeds' code did) to ``str``."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.integer):
            return int(value)
        if isinstance(value, numpy.floating):
            return float(value)
        if isinstance(value, numpy.ndarray):
            return value.tolist()
    return str(value)


def _fallback_rounded(value: Any) -> Any:
    """The contract package's fallback: as the exact one, and numpy bools to Python."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.bool_):
        return bool(value)
    return _fallback_exact(value)
