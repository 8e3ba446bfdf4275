"""JSON Schema of an episode line, generated from the pydantic models (one source of truth).

``schemas/episode.schema.json`` is this output, committed so capture code in any language
can validate against it; a test keeps the file and the models in step. A line may be written
in any layout of ``schemas.layouts``: the schema is ``oneOf`` the seeds' layout (the model's
own schema) and each other layout, derived from it by that layout's renames.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from schemas.episode import SCHEMA_VERSION, Episode
from schemas.layouts import LAYOUTS, SEEDS, Layout

SCHEMA_FILE = Path(__file__).with_name("episode.schema.json")
TRACE_DEF = "ExecutionTrace"
QUESTION_DEF = "Question"
# Keys the later layouts do not carry (their content comes from the gold trace instead).
NOT_IN_LATER_LAYOUTS = ("conversation_for_sft", "rl_verification_data")


def episode_json_schema() -> dict[str, Any]:
    seeds = Episode.model_json_schema(mode="validation")
    defs = seeds.pop("$defs")
    defs[QUESTION_DEF] = _id_or_null(defs[QUESTION_DEF])
    variants = [{"title": f"Episode ({SEEDS.name} layout)", **seeds}]
    for layout in LAYOUTS:
        if layout is not SEEDS:
            variant, trace = _variant(seeds, defs[TRACE_DEF], layout)
            defs[f"{TRACE_DEF}_{layout.name}"] = trace
            if layout.free_question_id:
                defs[f"{QUESTION_DEF}_{layout.name}"] = _free_id(defs[QUESTION_DEF], layout)
                variant["properties"]["question"] = {
                    "$ref": f"#/$defs/{QUESTION_DEF}_{layout.name}"
                }
            variants.append(variant)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"agent-traces/episode/{SCHEMA_VERSION}",
        "title": "Episode",
        "description": seeds.get("description", ""),
        "oneOf": variants,
        "$defs": defs,
    }


def _variant(
    seeds: dict[str, Any], trace: dict[str, Any], layout: Layout
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The seeds' schema with ``layout``'s names: top-level and trace renames."""
    back = {ours: theirs for theirs, ours in layout.renames.items()}
    variant = copy.deepcopy(seeds)
    variant["title"] = f"Episode ({layout.name} layout)"
    ref = {"$ref": f"#/$defs/{TRACE_DEF}_{layout.name}"}
    properties = {}
    for name, spec in variant["properties"].items():
        if name in NOT_IN_LATER_LAYOUTS:
            continue
        if name == "teacher_gold_trace":
            spec = ref
        elif name == "consistency_traces":
            spec = {**spec, "items": ref}
        properties[back.get(name, name)] = spec
    # the seeds' name of a renamed key is refused in this layout (``Layout.conflicts``)
    properties |= dict.fromkeys(layout.renames.values(), False)
    variant["properties"] = properties
    variant["required"] = [back.get(k, k) for k in seeds["required"]]
    trace_back = {ours: theirs for theirs, ours in layout.trace_renames.items()}
    renamed = copy.deepcopy(trace)
    renamed["title"] = f"{TRACE_DEF} ({layout.name} layout)"
    renamed["properties"] = {trace_back.get(k, k): v for k, v in trace["properties"].items()}
    renamed["properties"] |= dict.fromkeys(layout.trace_renames.values(), False)
    renamed["required"] = [trace_back.get(k, k) for k in trace.get("required", [])]
    return variant, renamed


def _id_or_null(question: dict[str, Any]) -> dict[str, Any]:
    """The question's schema where ``id`` may also be null or absent: the builder then uses
    the content address (the seeds' capture code wrote null where it had not computed it)."""
    lenient = copy.deepcopy(question)
    given = lenient["properties"]["id"]
    lenient["properties"]["id"] = {
        "anyOf": [{k: v for k, v in given.items() if k != "title"}, {"type": "null"}],
        "title": given.get("title", "Id"),
        "description": "sha256(question_text|hint)[:16]; null or absent: the builder computes it",
    }
    lenient["required"] = [k for k in lenient.get("required", []) if k != "id"]
    return lenient


def _free_id(question: dict[str, Any], layout: Layout) -> dict[str, Any]:
    """The question's schema where ``id`` is the producer's own: any string, or null."""
    free = copy.deepcopy(question)
    free["title"] = f"{QUESTION_DEF} ({layout.name} layout)"
    free["properties"]["id"] = {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "The producer's id; when it is not sha256(question_text|hint)[:16], "
        "the builder keeps it as capture_id and uses the content address",
    }
    free["required"] = [k for k in free.get("required", []) if k != "id"]
    return free
