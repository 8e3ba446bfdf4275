"""A line nested deeper than the builder's checks follow: a reject naming where, not a crash.

orjson reads values up to 1,024 levels deep (deeper is ``invalid_json``), but the checks
and normalization walk values recursively in Python (canonical JSON, hashing, comparing
answers within ``--answer-tolerance``), which stops at Python's recursion limit: a value
about 990 levels deep, or about 330 when answers are compared by value, raised
``RecursionError`` and ended the whole build. Such a line is now rejected, where its
deepest value is, and its neighbours are built.
"""

from __future__ import annotations

from typing import Any

from builder.validate.json_lines import REFUSED, LineJSON
from builder.validate.reject import FieldError, Reject
from schemas.vocabulary import SCHEMA

SHOWN_STEPS = 8  # of a deepest value's path: its field, and a few steps into it


def deepest(value: Any) -> tuple[str, int]:
    """The JSON path of the deepest value in ``value`` (its first few steps) and its depth,
    walked without recursion."""
    best: tuple[int, list[str | int]] = (0, [])
    stack: list[tuple[Any, int, list[str | int]]] = [(value, 0, [])]
    while stack:
        node, depth, path = stack.pop()
        if depth > best[0]:
            best = (depth, path)
        if isinstance(node, dict | list):
            steps = node.items() if isinstance(node, dict) else enumerate(node)
            for step, child in steps:
                room = len(path) < SHOWN_STEPS
                stack.append((child, depth + 1, [*path, step] if room else path))
    depth, path = best
    text = "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)
    return (text + "…" if depth > len(path) else text), depth


def too_deep(path: str, number: int, raw: bytes | LineJSON) -> Reject:
    """The reject of a line whose checks ran past Python's recursion limit."""
    line = raw if isinstance(raw, LineJSON) else LineJSON(raw)
    value = line.orjson_value()
    where, depth = deepest(value) if value is not REFUSED else ("$", 0)
    levels = f"nested {depth} levels deep" if depth else "nested too deep"
    said = f"{levels}, deeper than the builder's checks follow: store such a value as a JSON string"
    return Reject(path, number, SCHEMA, (FieldError(where, said),), line.raw)
