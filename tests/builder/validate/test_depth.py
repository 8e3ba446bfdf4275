"""A line nested deeper than the checks follow is a reject naming where; its neighbours build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from builder.cli.validate_files import validate_files
from builder.config import BuildConfig
from builder.ingest.batch import normalize_batch
from builder.ingest.rejects import RejectsWriter
from builder.sources.inputs import SourceLine
from builder.validate.depth import deepest
from builder.validate.reject import Reject
from schemas.episode import Episode
from tests.builder.conftest import episode, turns_trace

# Deep enough for canonical JSON to pass Python's recursion limit, short of orjson's 1,024
EXTRA_DEPTH = 1000
ANSWER_DEPTH = 400  # past what comparing answers within a tolerance follows


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def deep_extra_field(episode_id: str) -> bytes:
    """A valid episode with an unknown field holding an array ``EXTRA_DEPTH`` deep."""
    text = json.dumps(episode(episode_id) | {"zzz": 0})
    return text.replace('"zzz": 0', f'"zzz": {nested(EXTRA_DEPTH)}').encode()


def deep_answers(episode_id: str) -> bytes:
    """An episode whose traces all answer with one array ``ANSWER_DEPTH`` deep."""
    record = episode(episode_id, gold=turns_trace(answer="DEEP"))
    record["consistency_traces"] = [turns_trace(answer="DEEP") for _ in range(3)]
    text = json.dumps(record)
    return text.replace('"DEEP"', nested(ANSWER_DEPTH)).encode()


def lines(*raws: bytes) -> list[SourceLine]:
    return [SourceLine("episodes.jsonl", n, raw) for n, raw in enumerate(raws, 1)]


def test_the_deepest_value_is_found_without_recursion() -> None:
    value: Any = {"a": 1, "b": {"c": [1, {"d": orjson.loads(nested(EXTRA_DEPTH))}]}}
    path, depth = deepest(value)
    assert depth == EXTRA_DEPTH + 4  # b, c, [1], d, then the arrays
    assert path == "$.b.c[1].d[0][0][0][0]…"
    assert deepest({"a": [[1]]}) == ("$.a[0][0]", 3)
    assert deepest(7) == ("$", 0)


def test_a_line_nested_too_deep_is_rejected_and_its_neighbours_are_built() -> None:
    ok_before, ok_after = (json.dumps(episode(i)).encode() for i in ("ep-1", "ep-3"))
    batch = normalize_batch(lines(ok_before, deep_extra_field("ep-2"), ok_after), 4096)
    first, deep, last = batch.outcomes
    assert isinstance(deep, Reject) and not isinstance(first, Reject | type(None))
    assert not isinstance(last, Reject)
    assert deep.line == 2 and deep.kind == "schema"
    assert deep.path == "$.zzz[0][0][0][0][0][0][0]…"
    assert f"nested {EXTRA_DEPTH + 1} levels deep" in deep.message
    assert deep.raw == deep_extra_field("ep-2")  # kept whole
    for name, table in batch.tables.items():  # none of its rows stayed behind
        if "episode_id" in table.column_names:
            ids = set(table.column("episode_id").to_pylist())
            assert "ep-2" not in ids and ids <= {"ep-1", "ep-3"}, name
    assert batch.tables["episodes"].column("episode_id") == pa.chunked_array([["ep-1", "ep-3"]])


@pytest.mark.parametrize("tolerance", [None, 0.1])
def test_answers_too_deep_to_compare_within_a_tolerance_are_rejected_only_then(
    tolerance: float | None,
) -> None:
    (outcome,) = normalize_batch(lines(deep_answers("ep-1")), 4096, None, tolerance).outcomes
    assert isinstance(outcome, Reject) == (tolerance is not None)
    if isinstance(outcome, Reject):  # named where the answer is deepest (a trace's, a hook's)
        assert outcome.path.startswith("$.") and outcome.path.endswith("…")
        assert "levels deep, deeper than the builder's checks follow" in outcome.message


def test_validate_rejects_what_the_build_rejects(tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(json.dumps(episode("ep-1")).encode() + b"\n" + deep_extra_field("ep-2"))
    writer = RejectsWriter(tmp_path / "rejects.jsonl")
    counts = validate_files([str(path)], Episode, writer, 1 << 20, settings=BuildConfig())
    writer.close()
    assert (counts[str(path)].valid, counts[str(path)].rejected) == (1, 1)
    (reject,) = [json.loads(r) for r in (tmp_path / "rejects.jsonl").read_text().splitlines()]
    assert reject["line"] == 2 and reject["path"] == "$.zzz[0][0][0][0][0][0][0]…"
