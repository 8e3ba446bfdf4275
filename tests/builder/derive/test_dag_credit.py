"""The vectorized DAG-order credit equals ``process_reward``'s ``matched``, trace for trace,
on generated hooks with every defect the rule knows: dependencies listed after their
dependents, unknown and null dependency names, cycles and self-dependencies, shared names
and hashes, missing hashes, traces of episodes without gold hooks."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest

from builder.contract.rewards import process_reward
from builder.derive.dag_credit import matched_hooks

HASHES = [f"h{i}" for i in range(6)]
NAMES = ["a", "b", "c", "d", "e", None]


def _hook(rng: random.Random, trace: str, episode: str, index: int, gold: bool) -> dict:
    deps: list[str | None] | None = None
    if rng.random() < 0.8:
        deps = rng.sample(["a", "b", "c", "d", "e", "zz"], rng.randint(0, 3))
        if rng.random() < 0.05:
            deps.append(None)
    return {
        "trace_id": trace,
        "episode_id": episode,
        "hook_index": index,
        "value_hash": None if rng.random() < 0.05 else rng.choice(HASHES),
        "name": rng.choice(NAMES),
        "depends_on": deps,
        "is_gold": gold,
    }


def _episodes(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for e in range(40):
        episode = f"ep{e}"
        n_traces = rng.randint(1, 4)
        has_gold = rng.random() < 0.9
        for t in range(n_traces):
            gold = has_gold and t == 0
            for i in range(rng.randint(0, 9)):
                rows.append(_hook(rng, f"{episode}:t{t}", episode, i, gold))
    return rows


def _reference(rows: list[dict[str, Any]]) -> set[tuple[str, int]]:
    gold: dict[str, list[dict]] = {}
    traces: dict[str, list[dict]] = {}
    for row in rows:
        traces.setdefault(row["trace_id"], []).append(row)
        if row["is_gold"]:
            gold.setdefault(row["episode_id"], []).append(row)
    out = set()
    for trace, hooks in traces.items():
        hooks.sort(key=lambda h: h["hook_index"])
        golds = sorted(gold.get(hooks[0]["episode_id"], []), key=lambda h: h["hook_index"])
        result = process_reward([h["value_hash"] for h in hooks], golds)
        out |= {(trace, h["hook_index"]) for h, m in zip(hooks, result.matched, strict=True) if m}
    return out


SCHEMA = {
    "trace_id": pl.String,
    "episode_id": pl.String,
    "hook_index": pl.Int32,
    "value_hash": pl.String,
    "name": pl.String,
    "depends_on": pl.List(pl.String),
    "is_gold": pl.Boolean,
}


@pytest.mark.parametrize("seed", range(12))
def test_equals_process_reward_on_generated_hooks(seed: int) -> None:
    rows = _episodes(seed)
    frame = pl.DataFrame(rows, schema=SCHEMA).sample(fraction=1.0, shuffle=True, seed=seed)
    got = set(matched_hooks(frame).iter_rows())
    expected = _reference(rows)
    assert got == expected
    assert expected, "the generator should produce some matched hooks"


def test_a_chain_listed_backwards_is_credited_in_dag_order() -> None:
    gold = [
        {"name": "c", "value_hash": "hc", "depends_on": ["b"]},
        {"name": "b", "value_hash": "hb", "depends_on": ["a"]},
        {"name": "a", "value_hash": "ha", "depends_on": []},
    ]
    rows = [
        {**g, "trace_id": "g", "episode_id": "e", "hook_index": i, "is_gold": True}
        for i, g in enumerate(gold)
    ]
    student = ["ha", "hc", "hb", "hc"]
    rows += [
        {
            "trace_id": "s",
            "episode_id": "e",
            "hook_index": i,
            "value_hash": h,
            "name": None,
            "depends_on": None,
            "is_gold": False,
        }
        for i, h in enumerate(student)
    ]
    got = set(matched_hooks(pl.DataFrame(rows, schema=SCHEMA)).iter_rows())
    assert {i for t, i in got if t == "s"} == {0, 2, 3}  # c before b earns nothing
    assert {i for t, i in got if t == "g"} == {2}  # listed c, b, a: only a, which needs nothing
    assert got == _reference(rows)
