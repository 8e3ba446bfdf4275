"""The fast typed decode (``builder.validate.fastpath``) against pydantic, the contract.

Whenever the fast path accepts a line, pydantic must accept it too and the normalized rows
must be the same; whatever the fast path declines goes to pydantic anyway. Checked on
generated episodes and on thousands of deterministic mutations of them (wrong types,
bounds, patterns, unknown fields, datetimes in odd forms, huge numbers, escapes, duplicate
keys).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import msgspec
import pytest
from pydantic import BaseModel

import schemas.episode as episode_models
from builder.normalize.episode import emit_episode
from builder.normalize.questions import question_row
from builder.normalize.rows import EPISODE_TABLES, empty_rows
from builder.sources.inputs import SourceLine
from builder.validate import fastpath
from builder.validate.json_lines import LineJSON, has_long_digit_run
from builder.validate.reject import Reject
from builder.validate.validator import Valid, Validator
from samples.episodes import generate_episodes
from schemas.episode import Episode


def models() -> list[type[BaseModel]]:
    return [
        m
        for m in vars(episode_models).values()
        if isinstance(m, type)
        and issubclass(m, episode_models.Record)
        and m is not episode_models.Record
    ]


def test_every_model_has_a_derived_struct_with_the_same_fields() -> None:
    for model in models():
        struct = fastpath._DERIVED.structs[model]
        assert set(struct.__struct_fields__) == set(model.model_fields), model.__name__


def normalized(record: Any, raw: bytes) -> tuple[dict[str, list[Any]], Any, tuple[Any, ...]]:
    out = empty_rows()
    info = emit_episode(record, "f.jsonl", 1, 100_000, out)
    return (
        {t: out[t] for t in EPISODE_TABLES},
        info,
        question_row(record.question, "episode", "f.jsonl", 1),
    )


def agree(raw: bytes) -> bool:
    """Assert the two paths agree on ``raw``; True when the fast path accepted it."""
    fast = fastpath.decode(Episode, raw)
    slow = Validator(Episode).validate(SourceLine("f.jsonl", 1, raw))
    if fast is None:
        return False
    assert isinstance(slow, Valid), (raw[:300], slow)
    assert normalized(fast, raw) == normalized(slow.record, raw)
    return True


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return list(generate_episodes(40, seed=11))


def test_generated_lines_agree_and_most_take_the_fast_path(records: list[dict[str, Any]]) -> None:
    accepted = sum(agree(json.dumps(r).encode()) for r in records)
    # lines with unknown fields (a few percent) are left to pydantic, which keeps them
    assert accepted >= len(records) * 0.7


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        value = value[p]
    return value


REPLACEMENTS: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    3,
    1.0,
    2.5,
    -0.0,
    2**31,
    2**63,
    2**70,
    "",
    "x",
    "1",
    "yes",
    "0123456789abcdef",
    "0123456789abcdef\n",
    "0123456789ABCDEF",
    "0123456789abcde",
    [],
    [1],
    ["a"],
    {},
    {"a": 1},
    "EASY",
    "easy",
    "assistant",
    "robot",
    "2025-01-01",
    "2025-01-01 10:00:00",
    "2025-01-01T10:00:00Z",
    "2025-01-01T10:00:00+02:00",
    "2025-01-01T10:00:00.1234567",
    "1700000000",
    1700000000,
    "2025-13-01T00:00:00",
    "2025-01-01T24:00:00",
    "naïve ☃ \U0001f600",
    "tab\t",
    " \u3000",
    "\x1c",
    "\u200b\ufeff",
]
RAW_VALUES = [
    b"1" + b"0" * 400,
    b"123456789012345678901234567890",
    b"1e400",
    b"NaN",
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\ud83d\\ude00"',
    b"0.12345678901234567890123",
    b"-0",
    b"1E2",
    b"[" * 40 + b"]" * 40,
]


def mutations(record: dict[str, Any], rng: random.Random) -> list[bytes]:
    out = []
    paths = [p for p in _paths(record) if p]
    for _ in range(60):
        r = copy.deepcopy(record)
        path = rng.choice(paths)
        parent, key = _get(r, path[:-1]), path[-1]
        roll = rng.random()
        if roll < 0.55:
            parent[key] = rng.choice(REPLACEMENTS)
            out.append(json.dumps(r, ensure_ascii=rng.random() < 0.5).encode())
        elif roll < 0.7 and isinstance(parent, dict):
            del parent[key]
            out.append(json.dumps(r).encode())
        elif roll < 0.8:
            target = parent if isinstance(parent, dict) else r
            target["zz_unknown"] = rng.choice(REPLACEMENTS)
            out.append(json.dumps(r).encode())
        else:
            marker = "@@RAW@@"
            parent[key] = marker
            text = json.dumps(r).encode()
            out.append(text.replace(json.dumps(marker).encode(), rng.choice(RAW_VALUES), 1))
    # a duplicate key: both parsers keep the last value
    text = json.dumps(record).encode()
    out.append(text.replace(b'{"episode_id": ', b'{"verified": "no", "episode_id": ', 1))
    out.append(text.replace(b'"verified": ', b'"verified": 1, "verified": ', 1))
    return out


def test_mutated_lines_agree(records: list[dict[str, Any]]) -> None:
    rng = random.Random(5)
    accepted = declined = 0
    for record in records:
        for raw in mutations(record, rng):
            if agree(raw):
                accepted += 1
            else:
                declined += 1
    assert accepted > 100 and declined > 100  # both paths were exercised


def _decoded_from_bytes(raw: bytes) -> Any | None:
    """The typed decode as msgspec makes it from the line's bytes (no shared value)."""
    if has_long_digit_run(raw):
        return None
    try:
        record = fastpath._DECODERS[Episode].decode(raw)
        fastpath._finish(record)
    except (msgspec.DecodeError, RecursionError, fastpath._Decline, ValueError):
        return None
    return record


def test_typed_from_the_shared_value_as_from_the_bytes(records: list[dict[str, Any]]) -> None:
    """The Struct converted from orjson's value of the line is the one msgspec decodes from
    its bytes, on mutated lines (wrong types, bounds, odd numbers, NaN, duplicate keys, deep
    nesting); declined alike, but for a repeated key whose first value msgspec refuses."""
    rng = random.Random(8)
    accepted = repeated = 0
    for record in records:
        for raw in [json.dumps(record).encode(), *mutations(record, rng)]:
            expected = _decoded_from_bytes(raw)
            got = fastpath.decode(Episode, LineJSON(raw))
            if expected is not None:
                assert got == expected, raw[:300]
            elif got is not None:  # a key repeated with a wrong value first: read as pydantic
                assert agree(raw)  # reads it, the last value winning
                repeated += 1
            accepted += got is not None
    assert accepted > 100 and repeated > 0


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'{"episode_id": ""}', "schema"),
        (b"[]", "schema"),
        (b"{not json", "invalid_json"),
    ],
)
def test_declined_lines_get_pydantic_rejects(raw: bytes, kind: str) -> None:
    assert fastpath.decode(Episode, raw) is None
    reject = Validator(Episode).validate(SourceLine("f.jsonl", 1, raw))
    assert isinstance(reject, Reject) and reject.kind == kind


def test_derivation_refuses_what_it_cannot_mirror() -> None:
    from pydantic import ConfigDict, Field

    class Lax(BaseModel):
        model_config = ConfigDict(extra="allow")
        when: set[int] = Field(default_factory=set)

    with pytest.raises(fastpath.DerivationError):
        fastpath._Deriver().struct(Lax)
