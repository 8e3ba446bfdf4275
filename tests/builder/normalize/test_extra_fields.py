"""Unknown fields are found by walking only the fields that can hold a model: the same
paths, in the same order, as a walk over every field."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from builder.normalize.episode import extra_fields
from samples.episodes import generate_episodes
from schemas.episode import Episode


def _every_field(model: BaseModel, path: str = "$") -> Iterator[tuple[str, Any]]:
    for key, value in (model.model_extra or {}).items():
        yield f"{path}.{key}", value
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _every_field(value, f"{path}.{name}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _every_field(item, f"{path}.{name}[{i}]")


def _objects(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value, *(o for v in value.values() for o in _objects(v))]
    if isinstance(value, list):
        return [o for v in value for o in _objects(v)]
    return []


def test_extra_fields_are_those_of_a_walk_over_every_field() -> None:
    rng = random.Random(4)
    found = 0
    for record in generate_episodes(30, seed=9):
        objects = _objects(record)
        for obj in rng.sample(objects, min(4, len(objects))):
            obj[f"zz_{rng.randint(0, 9)}"] = rng.choice([1, "x", None, {"a": [1]}])
        try:
            episode = Episode.model_validate_json(json.dumps(record))
        except ValueError:
            continue  # an unknown field where the schema forbids one
        expected = list(_every_field(episode))
        assert list(extra_fields(episode)) == expected
        found += bool(expected)
    assert found > 10
