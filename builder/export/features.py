"""A config's ``features`` in the card's YAML, written from its Arrow schema.

``datasets`` checks each Parquet file against these, so they must be exactly what its own
conversion writes (``Features.from_arrow_schema(schema)._to_yaml_list()``). Importing
``datasets`` for that costs about 0.7 CPU-seconds, more than the rest of the card, so the
types the project's schemas use are converted here, by the same rules; anything else
(extension types, dictionaries, schema-level ``huggingface`` metadata) raises
``Unconvertible`` and the caller asks ``datasets``. A test compares the two on every
declared schema and on generated nested types.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.types as t


class Unconvertible(ValueError):
    """A type this module does not convert: ``datasets`` must."""


# ``datasets``' dtype names where they differ from Arrow's own (``str(type)``).
_RENAMED = {pa.float16(): "float16", pa.float32(): "float32", pa.float64(): "float64"}
_NAMED_AS_IS = (
    t.is_null,
    t.is_boolean,
    t.is_integer,
    t.is_binary,
    t.is_large_binary,
    t.is_string,
    t.is_large_string,
    t.is_date32,
    t.is_date64,
)


def schema_features(schema: pa.Schema) -> list[dict[str, Any]]:
    """The ``features`` list of a config with this schema."""
    if schema.metadata and b"huggingface" in schema.metadata:
        raise Unconvertible("features declared in the schema's metadata")
    return [{"name": f.name, **_feature(f.type)} for f in schema]


def _feature(type_: pa.DataType) -> dict[str, Any]:
    if t.is_struct(type_):
        return {"struct": [{"name": f.name, **_feature(f.type)} for f in type_]}
    if t.is_fixed_size_list(type_):
        return {**_listed("list", type_.value_type), "length": type_.list_size}
    if t.is_list(type_):
        return _listed("list", type_.value_type)
    if t.is_large_list(type_):
        return _listed("large_list", type_.value_type)
    return {"dtype": _dtype(type_)}


def _listed(key: str, item: pa.DataType) -> dict[str, Any]:
    # A list of plain values names their dtype; a list of structs, their fields.
    inner = _feature(item)
    if list(inner) == ["dtype"]:
        return {key: inner["dtype"]}
    if list(inner) == ["struct"]:
        return {key: inner["struct"]}
    return {key: inner}


def _dtype(type_: pa.DataType) -> str:
    if type_ in _RENAMED:
        return _RENAMED[type_]
    if any(is_kind(type_) for is_kind in _NAMED_AS_IS):
        return str(type_).removesuffix("[day]").removesuffix("[ms]")
    if t.is_timestamp(type_) and type_.tz is None:
        return f"timestamp[{type_.unit}]"
    if t.is_timestamp(type_) and type_.tz:
        return f"timestamp[{type_.unit}, tz={type_.tz}]"
    raise Unconvertible(f"no conversion of {type_} here")
