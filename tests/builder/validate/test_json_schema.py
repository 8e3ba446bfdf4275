"""The committed JSON Schema of an episode line is exactly what the models generate."""

from __future__ import annotations

import json

from schemas.episode import SCHEMA_VERSION
from schemas.json_schema import SCHEMA_FILE, episode_json_schema


def test_committed_schema_file_matches_the_models() -> None:
    expected = json.dumps(episode_json_schema(), indent=2, sort_keys=True) + "\n"
    assert SCHEMA_FILE.read_text(encoding="utf-8") == expected, (
        "schemas/episode.schema.json is stale: run `make schema`"
    )


def test_schema_states_the_contract() -> None:
    schema = episode_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"agent-traces/episode/{SCHEMA_VERSION}"
    seeds, later = schema["oneOf"]  # one variant per layout (schemas.layouts)
    assert sorted(seeds["required"]) == ["episode_id", "question", "teacher_gold_trace", "verified"]
    assert sorted(later["required"]) == ["episode_id", "gold_trace", "question", "verified"]
    assert "conversation_for_sft" not in later["properties"]
    assert later["properties"]["gold_trace"] == {"$ref": "#/$defs/ExecutionTrace_capture_v2"}
    assert "success" in schema["$defs"]["ExecutionTrace_capture_v2"]["properties"]
    defs = schema["$defs"]
    for name in ("Question", "ExecutionTrace", "Turn", "Execution", "Hook", "Correction"):
        assert name in defs, name
        assert defs[name].get("additionalProperties") is True, name  # unknown fields are kept
    assert defs["Hook"]["properties"]["value_hash"]["pattern"] == "^[0-9a-f]{16}$"
    assert sorted(defs["Hook"]["required"]) == ["code_line", "value_hash"]
    assert defs["Execution"]["properties"]["success"]["type"] == "boolean"
    # A free string, as the capture code types it; the seeds' four spellings are documented.
    difficulty = defs["Question"]["properties"]["difficulty"]
    assert difficulty["anyOf"][0] == {"type": "string"}
    assert all(d in difficulty["description"] for d in ("EASY", "MEDIUM", "HARD", "VERY_HARD"))
