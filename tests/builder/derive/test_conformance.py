"""Every objective frame casts to its schema, counts are exact, and output is reproducible."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from builder.derive import OBJECTIVE_MODULES, DeriveOptions, derive_all
from samples.episodes import generate_episodes


def conform(name: str, frame: pl.DataFrame) -> pa.Table:
    schema = OBJECTIVE_MODULES[name].SCHEMA
    table = frame.to_arrow().select(schema.names).cast(schema)
    assert table.schema.equals(schema, check_metadata=True)
    for field in schema:
        if not field.nullable:
            assert table.column(field.name).null_count == 0, (name, field.name)
    return table


def collect_all(tables, options: DeriveOptions | None = None) -> dict[str, pl.DataFrame]:
    return {name: frame.collect() for name, frame in derive_all(tables, options).items()}


def test_every_frame_has_exactly_the_schema_columns_and_casts(derived) -> None:
    for name, frame in derived.items():
        assert frame.columns == OBJECTIVE_MODULES[name].SCHEMA.names
        conform(name, frame)


def test_counts_are_exact_on_the_sample(tables, derived, make) -> None:
    counts = {name: frame.height for name, frame in derived.items()}
    assert counts == make.expected_counts(tables, cap=4)
    assert counts == {
        "sft": 2,
        "sft_turns": 5,
        "rl": 2,
        "prm": 6,
        "prm_stepwise": 6,
        "orm": 6,
        "dpo": 4,
        "self_correction": 2,
    }


def test_input_order_does_not_change_any_output(sample, derived, make) -> None:
    reordered = collect_all(make.build_tables(list(reversed(sample))))
    for name, frame in derived.items():
        assert frame.equals(reordered[name]), name


def test_no_episodes_gives_empty_conforming_frames(make) -> None:
    for name, frame in collect_all(make.build_tables([])).items():
        assert frame.height == 0
        conform(name, frame)


def test_counts_are_exact_on_generated_episodes(make) -> None:
    tables = make.build_tables(generate_episodes(300, seed=11))
    for cap in (4, 1):
        derived = collect_all(tables, DeriveOptions(dpo_max_pairs_per_episode=cap))
        counts = {name: frame.height for name, frame in derived.items()}
        assert counts == make.expected_counts(tables, cap)
        assert all(counts.values()), counts
        for name, frame in derived.items():
            conform(name, frame)
    again = collect_all(tables, DeriveOptions(dpo_max_pairs_per_episode=1))
    assert all(frame.equals(again[name]) for name, frame in derived.items())
