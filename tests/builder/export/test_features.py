"""The card's features, written without ``datasets``, are what ``datasets`` writes."""

from __future__ import annotations

import pyarrow as pa
import pytest
from datasets import Features
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.export.card import ExportedConfig, _dataset_info, _dataset_info_by_datasets
from builder.export.features import Unconvertible, schema_features
from schemas.objectives import OBJECTIVES
from schemas.sessions import SESSION_TABLES
from schemas.tables import SPLIT_ASSIGNMENT, TABLES

DECLARED = {**OBJECTIVES, **TABLES, **SESSION_TABLES, "splits": SPLIT_ASSIGNMENT}


def by_datasets(schema: pa.Schema) -> list[dict]:
    return Features.from_arrow_schema(schema)._to_yaml_list()


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_every_declared_schema_gets_the_features_datasets_writes(name: str) -> None:
    assert schema_features(DECLARED[name]) == by_datasets(DECLARED[name])


PLAIN = [
    pa.null(),
    pa.bool_(),
    *(pa.int8(), pa.int16(), pa.int32(), pa.int64()),
    *(pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.date32(),
    pa.date64(),
    *(pa.timestamp(unit) for unit in ("s", "ms", "us", "ns")),
    *(pa.timestamp(unit, tz) for unit in ("ms", "us") for tz in ("UTC", "Europe/Paris")),
]
NAMES = st.text(alphabet="abcxyz_", min_size=1, max_size=4)


def _struct(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
    fields = st.lists(st.tuples(NAMES, children), max_size=3, unique_by=lambda f: f[0])
    return fields.map(lambda fs: pa.struct([pa.field(n, c) for n, c in fs]))


TYPES = st.recursive(
    st.sampled_from(PLAIN),
    lambda children: st.one_of(
        children.map(pa.list_),
        children.map(pa.large_list),
        st.tuples(children, st.integers(1, 4)).map(lambda c: pa.list_(c[0], c[1])),
        _struct(children),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, TYPES), min_size=1, max_size=4, unique_by=lambda f: f[0]))
def test_generated_nested_types_get_the_features_datasets_writes(fields: list) -> None:
    schema = pa.schema([pa.field(n, c) for n, c in fields])
    assert schema_features(schema) == by_datasets(schema)


@pytest.mark.parametrize(
    "schema",
    [
        pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))]),
        pa.schema([("t", pa.time64("us"))]),
        pa.schema([("x", pa.decimal128(10, 2))]),
        pa.schema([("s", pa.string())], metadata={b"huggingface": b"{}"}),
    ],
)
def test_other_types_are_left_to_datasets(schema: pa.Schema) -> None:
    with pytest.raises(Unconvertible):
        schema_features(schema)
    config = ExportedConfig("odd", schema, {"train": 1}, "table")
    assert _dataset_info([config]) == _dataset_info_by_datasets([config])


@pytest.mark.parametrize(
    "names",
    [[], ["sft"], ["default"], ["sft", "dpo", "questions", "actions"], sorted(DECLARED)],
)
def test_the_card_lays_out_the_infos_as_datasets_does(names: list[str]) -> None:
    schemas = {name: DECLARED.get(name, OBJECTIVES["sft"]) for name in names}
    configs = [ExportedConfig(n, s, {"train": 1}, "table") for n, s in schemas.items()]
    assert _dataset_info(configs) == _dataset_info_by_datasets(configs)
