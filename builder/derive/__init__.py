"""Derive stage: the normalized tables become one frame per training objective.

Each objective module exposes ``NAME``, ``SCHEMA`` (from ``schemas.objectives``) and
``derive(tables, options) -> pl.LazyFrame``; the collected frame, after
``.to_arrow().select(SCHEMA.names).cast(SCHEMA)``, conforms to the schema. Rows are sorted by
their keys so builds are reproducible. Only training-eligible episodes feed the configs
(``builder.derive.eligibility``); ``prm``, whose label encodes verification, also takes
the unverified ones (``eligibility.sound_episodes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType

import polars as pl

from builder.derive import dpo, orm, prm, prm_stepwise, rl, self_correction, sft, sft_turns
from builder.derive.eligibility import eligible_episodes, exclusion_counts, exclusion_reasons
from builder.derive.messages import messages_key, render_traces, render_turns, rendered_key
from builder.derive.options import DEFAULT_SYSTEM_PROMPT, PLAN_ENGINE, DeriveOptions
from schemas.objectives import OBJECTIVES

OBJECTIVE_MODULES: dict[str, ModuleType] = {
    m.NAME: m for m in (sft, sft_turns, rl, prm, prm_stepwise, orm, dpo, self_correction)
}
assert list(OBJECTIVE_MODULES) == list(OBJECTIVES), "objective modules out of schema order"
# Objectives that are a reshaping of another one's rows: built from that objective's
# collected frame (``name -> (source, reshape)``) rather than derived a second time from the
# tables; ``reshape(source rows)`` gives exactly ``derive(tables)``'s rows.
RESHAPED: dict[str, tuple[str, Callable[[pl.LazyFrame], pl.LazyFrame]]] = {
    sft_turns.NAME: (sft.NAME, sft_turns.from_sft),
}


def derived_from_tables(
    tables: Mapping[str, pl.LazyFrame], options: DeriveOptions | None = None
) -> dict[str, pl.LazyFrame]:
    """The derive step, as the export runs it a bucket at a time: every objective's lazy
    frame made from the tables, in schema order, but those ``RESHAPED`` from another's
    collected rows (``reshaped``)."""
    options = options or DeriveOptions()
    return {
        name: module.derive(tables, options)
        for name, module in OBJECTIVE_MODULES.items()
        if name not in RESHAPED
    }


def shared(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> dict[str, pl.LazyFrame]:
    """What several objectives would each compute from the same ``tables``, computed once
    on the calling thread (the export adds them to a bucket's tables before deriving): the
    turns and traces rendered as messages, and ``prm_stepwise``'s matched hooks. Every
    objective derived with them gives the rows it gives without them."""
    chars = options.max_output_chars
    out = {rendered_key(chars): render_turns(tables, chars).collect(engine=PLAN_ENGINE).lazy()}
    with_turns = {**tables, **out}
    out[messages_key(chars)] = render_traces(with_turns, chars).collect(engine=PLAN_ENGINE).lazy()
    out[prm_stepwise.MATCHED_HOOKS] = prm_stepwise.matched(tables, options).lazy()
    return out


def reshaped(name: str, rows: pl.LazyFrame) -> pl.LazyFrame:
    """Objective ``name``'s rows from its source objective's ``rows`` (``RESHAPED``)."""
    return RESHAPED[name][1](rows)


def derive_all(
    tables: Mapping[str, pl.LazyFrame], options: DeriveOptions | None = None
) -> dict[str, pl.LazyFrame]:
    """Every objective's lazy frame, in schema order."""
    frames = derived_from_tables(tables, options)
    for name, (source, _) in RESHAPED.items():
        frames[name] = reshaped(name, frames[source])
    return {name: frames[name] for name in OBJECTIVE_MODULES}


__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "OBJECTIVE_MODULES",
    "RESHAPED",
    "DeriveOptions",
    "derive_all",
    "derived_from_tables",
    "eligible_episodes",
    "exclusion_counts",
    "exclusion_reasons",
    "reshaped",
    "shared",
]
