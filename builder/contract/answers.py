"""Answers compared by value, within a float tolerance: how the capture code verifies.

The seeds define the verified guarantees by answer hashes, and the checks hold episodes to
exactly that (``builder.normalize.checks``). The capture code that wrote them decides ``verified``,
the
majority answer and ``gold_matches_majority`` by comparing answer *values* instead: two numbers
match within an absolute tolerance (±0.1 by default), so a gold answer of 54.36 is verified by
consistency answers 54.33 and 54.29, whose hashes all differ. With ``[checks]
answer_tolerance`` set, the checks also accept a triangulation that holds under this
comparison (``builder.normalize.checks``).

The rule here is the capture code's core one, in our words:

* numbers (``bool`` counts as one, as in Python) match when ``|a − b| ≤ tolerance``; NaN and
  infinities match nothing, themselves included;
* strings match when equal after Unicode NFKC and with every dash or minus sign read as ``-``;
* lists match member by member (same length); lists of strings also match as sorted lists;
* objects match when they have the same keys and their values match;
* anything else matches when equal.

Its special cases for particular answer shapes (p-values at a tighter tolerance, swapped
group pairs, keys it ignores, JSON inside a string, a number inside a one-key object) are not
reproduced: episodes that need them stay flagged.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Sequence
from typing import Any

_DASHES = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"))


def answers_match(a: Any, b: Any, tolerance: float) -> bool:
    """Whether two decoded JSON answers match (module docstring)."""
    if _is_number(a) and _is_number(b):
        difference = abs(float(a) - float(b))
        return not math.isnan(difference) and difference <= tolerance
    if isinstance(a, str) and isinstance(b, str):
        return _text(a) == _text(b)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if all(answers_match(x, y, tolerance) for x, y in zip(a, b, strict=True)):
            return True
        strings = all(isinstance(x, str) for x in [*a, *b])
        return strings and sorted(map(_text, a)) == sorted(map(_text, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(answers_match(a[k], b[k], tolerance) for k in a)
    return bool(a == b)


def matches_itself(answer: Any, tolerance: float) -> bool:
    """Whether an answer matches itself by value: false when a NaN or an infinity is in it,
    which match nothing, so it verifies nothing, whatever its hash."""
    return answers_match(answer, answer, tolerance)


def answer_texts_match(answer: str | None, expected: str | None, tolerance: float) -> bool:
    """``answers_match`` of two answers stored as canonical JSON text (the tables' form);
    no answer matches nothing."""
    if answer is None or expected is None:
        return False
    return answers_match(json.loads(answer), json.loads(expected), tolerance)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)


def _text(value: str) -> str:
    return unicodedata.normalize("NFKC", value).translate(_DASHES)


def majority(answers: Sequence[Any], tolerance: float) -> tuple[int, int] | None:
    """(index of the majority's first answer, how many answers match it) over the
    submitted answers, clustered as the capture code clusters them: each answer joins the
    first cluster whose first answer it matches; the largest cluster wins, the earliest on
    a tie. None when there is no answer."""
    clusters: list[list[int]] = []  # [index of its first answer, size]
    for i, answer in enumerate(answers):
        for cluster in clusters:
            if answers_match(answers[cluster[0]], answer, tolerance):
                cluster[1] += 1
                break
        else:
            clusters.append([i, 1])
    if not clusters:
        return None
    first, size = max(clusters, key=lambda c: c[1])  # max keeps the earliest of equals
    return first, size
