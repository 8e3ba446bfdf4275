"""JSON Schema of an episode line, generated from the pydantic models (one source of truth).

``schemas/episode.schema.json`` is this output, committed so capture code in any language
can validate against it; a test keeps the file and the models in step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schemas.episode import SCHEMA_VERSION, Episode

SCHEMA_FILE = Path(__file__).with_name("episode.schema.json")


def episode_json_schema() -> dict[str, Any]:
    schema = Episode.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"agent-traces/episode/{SCHEMA_VERSION}"
    return schema
