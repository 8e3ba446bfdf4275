"""The JSON paths of unknown fields (``episodes.extra_fields`` and the manifest's counts): a
key that is not a plain name is spelled in brackets, as a JSON string, so a key ``"a.b[0]"``
is never read as the path of ``{"a": {"b": [...]}}``; a plain key is spelled as it was."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from builder.normalize import Normalizer
from builder.normalize.episode import generic_path
from builder.sources.inputs import SourceLine
from builder.validate.validator import Valid, Validator
from samples.variants import to_capture_v2
from schemas.episode import Episode


def run(make: SimpleNamespace, *records: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    normalizer = Normalizer()
    for i, record in enumerate(records, start=1):
        normalizer.episode(make.valid(record, number=i))
    episodes = normalizer.take_tables()["episodes"].to_pylist()
    return [json.loads(r["extra_fields"] or "null") for r in episodes], normalizer.stats


def test_a_dotted_key_is_not_the_path_of_nested_keys(make: SimpleNamespace) -> None:
    dotted, nested = make.episode("ep-1"), make.episode("ep-2")
    dotted["a.b[0]"] = 1
    nested["a"] = {"b": [1]}
    (first, second), stats = run(make, dotted, nested)
    assert first == {'$["a.b[0]"]': 1}
    assert second == {"$.a": {"b": [1]}}
    assert stats.extra_fields == {'$["a.b[0]"]': 1, "$.a": 1}


def test_keys_in_nested_records_and_their_generic_paths(make: SimpleNamespace) -> None:
    record = make.episode("ep-1")
    record["teacher_gold_trace"]["turns"][1]["x.y"] = 1
    record["teacher_gold_trace"]["turns"][2]['say "hi" [2]\\'] = 2
    record["consistency_traces"][2]["latency_ms"] = 3  # a plain key: spelled as before
    record["question"]["tag-set"] = 4
    (extras,), stats = run(make, record)
    assert extras == {
        '$.teacher_gold_trace.turns[1]["x.y"]': 1,
        '$.teacher_gold_trace.turns[2]["say \\"hi\\" [2]\\\\"]': 2,
        "$.consistency_traces[2].latency_ms": 3,
        '$.question["tag-set"]': 4,
    }
    assert stats.extra_fields == {
        '$.teacher_gold_trace.turns[*]["x.y"]': 1,
        '$.teacher_gold_trace.turns[*]["say \\"hi\\" [2]\\\\"]': 1,
        "$.consistency_traces[*].latency_ms": 1,
        '$.question["tag-set"]': 1,
    }


def test_the_later_layout_spells_its_own_trace_before_a_bracketed_key(
    make: SimpleNamespace,
) -> None:
    line = to_capture_v2(make.episode("ep-1"))
    line["gold_trace"]["turns"][0]["x.y"] = 1
    line["gold_trace"]["run id"] = 2
    outcome = Validator(Episode).validate(SourceLine("f", 1, json.dumps(line).encode()))
    assert isinstance(outcome, Valid) and outcome.layout == "capture_v2"
    normalizer = Normalizer()
    normalizer.episode(outcome)
    (row,) = normalizer.take_tables()["episodes"].to_pylist()
    extras = json.loads(row["extra_fields"])
    assert extras['$.gold_trace.turns[0]["x.y"]'] == 1
    assert extras['$.gold_trace["run id"]'] == 2
    assert '$.gold_trace.turns[*]["x.y"]' in normalizer.stats.extra_fields


@pytest.mark.parametrize(
    ("path", "generic"),
    [
        ("$.consistency_traces[2].foo", "$.consistency_traces[*].foo"),
        ('$["a.b[0]"]', '$["a.b[0]"]'),
        ('$.consistency_traces[10]["[3]"]', '$.consistency_traces[*]["[3]"]'),
        ('$.q["\\"]"]', '$.q["\\"]"]'),
        ('$["é ü"]', '$["é ü"]'),
    ],
)
def test_generic_path_counts_indexes_never_a_key_s_own_text(path: str, generic: str) -> None:
    assert generic_path(path) == generic
