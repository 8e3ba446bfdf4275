"""A line read once (``LineJSON``) for every check that reads it: each check says of it what
it says of the line's bytes, whichever checks read it before, on awkward lines."""

from __future__ import annotations

import copy
import json
import math
import random
from typing import Any

import orjson
import pytest

from builder.sources.inputs import SourceLine
from builder.validate import fastpath
from builder.validate.json_lines import (
    REFUSED,
    LineJSON,
    _delimiters,
    _json_nodes,
    _Object,
    _python_dialect,
    duplicate_keys,
    has_long_digit_run,
    line_value,
    parse_line,
)
from builder.validate.validator import Validator
from samples.episodes import generate_episodes
from schemas.episode import Episode

AWKWARD = [
    b'{"a": 1, "b": [{"c": 1}]}',
    b'{"a": 1, "a": 2}',
    b'{"x": [{"c": 1}, {"c": 1, "c": 2}], "y": {"z": {"k": 0, "k": 0}}}',
    b'{"n": NaN, "n": 1}',
    b'{"n": NaN, "i": Infinity, "j": -Infinity}',
    b'{"big": 123456789012345678901234567890, "f": 1e16, "g": -0.0, "h": 0.1}',
    b'{"big": 123456789012345678901234567890, "big": 1}',
    b'{"digits": "1234567890123456789012", "a": 1, "a": 1}',
    b'{"s": "\\ud800", "t": "\\u00e9\\u20ac", "u": "\xc3\xa9"}',
    b'{"a": "\\u0022", "a": "\\u0022\\u0022"}',
    b'{"a": "x\\u005c", "b": 1}',
    b'{"a\\\\": 1, "a\\u005c": 2}',
    b"[" * 300 + b"]" * 300,  # orjson reads it, but writes no deeper than 254
    b'{"d": ' + b"[" * 2000 + b"]" * 2000 + b"}",  # deeper than orjson reads
    b"1e400",
    b"not json",
    b'{"x": 1',
    b"\xff\xfe",
    b"null",
    b"",
]


def _reference_line_value(raw: bytes) -> Any:
    """``line_value`` as it was before lines were read once: its own parses."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _python_dialect(raw)
    if not has_long_digit_run(raw):
        return value
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return value


def _same(a: Any, b: Any) -> bool:
    """Equal as values, of one type each (``1 != 1.0`` here), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _lines() -> list[bytes]:
    episodes = [json.dumps(e).encode() for e in generate_episodes(12, seed=5)]
    rng = random.Random(11)
    mutated = []
    for raw in episodes:  # a repeated key, a big integer, a NaN: each where the line has one
        at = raw.index(b'"verified"')
        mutated.append(raw[:at] + b'"verified": true, ' + raw[at:])
        mutated.append(raw.replace(b'"turn_index": 0', b'"turn_index": 10000000000000000000', 1))
        mutated.append(raw.replace(b"0.5", b"NaN", 1))
        cut = rng.randrange(len(raw))
        mutated.append(raw[:cut])
    return AWKWARD + episodes + mutated


@pytest.mark.parametrize("order", ["dup_first", "value_first"])
def test_a_line_read_once_is_read_as_its_bytes(order: str) -> None:
    for raw in _lines():
        line = LineJSON(raw)
        if order == "dup_first":
            duplicates, value = duplicate_keys(line), line_value(line)
        else:
            value, duplicates = line_value(line), duplicate_keys(line)
        assert duplicates == duplicate_keys(raw), raw[:80]
        assert _same(value, _reference_line_value(raw)), raw[:80]
        assert _same(line_value(raw), _reference_line_value(raw)), raw[:80]
        assert line.long_run is has_long_digit_run(raw)


def test_the_typed_decode_of_a_line_read_once_is_that_of_its_bytes() -> None:
    for raw in _lines():
        fast, once = fastpath.decode(Episode, raw), fastpath.decode(Episode, LineJSON(raw))
        assert (fast is None) is (once is None), raw[:80]
        if fast is not None:
            assert fast == once


def _reference_duplicate_keys(raw: bytes) -> list[str]:
    """``duplicate_keys`` before orjson's own lines skipped the delimiter counts."""
    value = LineJSON(raw).orjson_value()
    if value is not REFUSED:
        try:
            if _delimiters(raw) == _delimiters(orjson.dumps(value)):
                return []
        except orjson.JSONEncodeError:
            pass
    try:
        value = json.loads(raw, object_pairs_hook=_Object)
    except (ValueError, RecursionError):
        return []
    found = [
        f"{path}.{key}"
        for node, path in _json_nodes(value)
        if isinstance(node, _Object)
        for key in node.repeated
    ]
    return sorted(found)


def _orjson_lines() -> list[bytes]:
    """Lines as orjson writes them (no spaces, UTF-8), and the same with a key repeated at
    some depth, a backslash spelled ``\\u005c``, a long integer or a NaN spliced in."""
    rng = random.Random(7)
    out = []
    for episode in generate_episodes(12, seed=9):
        raw = orjson.dumps(episode)
        out.append(raw)
        keys = [i for i in range(len(raw)) if raw.startswith(b'":', i)]
        for _ in range(4):  # a key written twice: its own text, then again
            end = rng.choice(keys)
            start = raw.rindex(b'"', 0, end)
            while start and raw[start - 1] == ord("\\"):
                start = raw.rindex(b'"', 0, start - 1)
            out.append(raw[: end + 2] + b"0," + raw[start : end + 2] + raw[end + 2 :])
        out.append(raw.replace(b'"code":"', b'"code":"\\u005c', 1))
        out.append(raw.replace(b'"code":"', b'"code":"x\\\\', 1))
        out.append(raw.replace(b'"turn_index":0', b'"turn_index":123456789012345678901234', 1))
        out.append(raw.replace(b'"verified":', b'"verified":NaN,"verified":', 1))
    return out


def test_duplicate_keys_are_those_the_delimiter_counts_found() -> None:
    for raw in AWKWARD + _lines() + _orjson_lines():
        assert duplicate_keys(raw) == _reference_duplicate_keys(raw), raw[:80]
        assert duplicate_keys(LineJSON(raw)) == _reference_duplicate_keys(raw), raw[:80]


def test_orjson_lines_with_a_repeated_key_are_caught() -> None:
    lines = _orjson_lines()
    assert sum(bool(duplicate_keys(raw)) for raw in lines) >= 40
    values = [LineJSON(raw).orjson_value() for raw in lines]
    own = [raw for raw, value in zip(lines, values, strict=True) if value is not REFUSED]
    assert sum(orjson.dumps(orjson.loads(raw)) == raw for raw in own) >= 12


def test_parse_line_takes_the_shared_parse_and_says_what_it_says_of_the_bytes() -> None:
    """``parse_line`` given the line as its other checks read it: the same value (or the
    same reject) as from the line's bytes alone, for lines orjson reads and lines it refuses."""
    for number, raw in enumerate(AWKWARD + _lines() + _orjson_lines(), start=1):
        line = SourceLine("f.jsonl", number, raw)
        alone, rejected = parse_line(line)
        shared, shared_rejected = parse_line(line, LineJSON(raw))
        assert shared_rejected == rejected, raw[:80]
        assert _same(shared, alone), raw[:80]


def test_the_slow_path_given_the_shared_parse_validates_as_from_the_bytes() -> None:
    """``Validator.validate`` with the line as its checks read it: the same record or reject,
    and the shared value left as orjson read it (the patch and the key check read it after)."""
    for number, raw in enumerate(AWKWARD + _lines() + _orjson_lines(), start=1):
        line, read = SourceLine("f.jsonl", number, raw), LineJSON(raw)
        value = read.orjson_value()
        before = value if value is REFUSED else copy.deepcopy(value)
        assert Validator(Episode).validate(line, read) == Validator(Episode).validate(line)
        assert read.orjson_value() is value and _same(value, before), raw[:80]
