"""Realistic-size episodes for the build benchmark (the issue's profile).

``samples.episodes`` writes internally consistent episodes of a few KB. Real captures are
≈56 KB each: long stdout (DataFrame prints), longer reasoning and code, 3–7 consistency
traces. This module inflates generated episodes deterministically (a seed-derived RNG per
episode, never the clock): it pads text fields only (stdout, reasoning, code cells, stderr,
assistant messages), which no hash covers, and adds consistency traces by repeating
existing ones, recomputing ``verified`` and ``triangulation_metadata`` the way
``builder.normalize.checks`` does — so an inflated episode stays clean. Both trace forms, failures,
corrections, unknown fields and any-typed answers come from the generator unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import orjson

from samples.episodes import generate_episodes, triangulate

TARGET_BYTES = 56_000
_REGIONS = ("South", "East", "West", "Central", "North")
_CATS = ("Furniture", "Technology", "Office Supplies", "Appliances", "Binders")
_WORDS = [
    "filter",
    "the",
    "frame",
    "then",
    "group",
    "by",
    "the",
    "key",
    "and",
    "aggregate",
    "the",
    "values",
    "before",
    "checking",
    "the",
    "shape",
    "of",
    "the",
    "result",
    "and",
    "the",
    "dtypes",
    "so",
    "that",
    "the",
    "mean",
    "is",
    "computed",
    "on",
    "numeric",
    "data",
    "only",
]


def _pool(seed: int = 7) -> list[str]:
    rng = random.Random(f"profile-pool:{seed}")
    rows = []
    for i in range(4096):
        rows.append(
            f"{i:>6}  {rng.choice(_REGIONS):<8} {rng.choice(_CATS):<16} "
            f"{rng.uniform(-5e3, 2e4):>10.2f} {rng.uniform(0, 1):>6.2f} {rng.randint(1, 14):>3}"
        )
    return rows


_ROWS = _pool()


def _table(rng: random.Random, size: int) -> str:
    """A DataFrame-print-like block of about ``size`` bytes."""
    out, n = [], 0
    start = rng.randrange(len(_ROWS))
    while n < size:
        row = _ROWS[(start + len(out)) % len(_ROWS)]
        out.append(row)
        n += len(row) + 1
    return "\n".join(out)


def _prose(rng: random.Random, size: int) -> str:
    words, n = [], 0
    while n < size:
        w = rng.choice(_WORDS)
        words.append(w)
        n += len(w) + 1
    return " ".join(words)


def _traces(episode: dict[str, Any]) -> list[dict[str, Any]]:
    return [episode["teacher_gold_trace"], *episode["consistency_traces"]]


def _slots(episode: dict[str, Any]) -> list[tuple[dict[str, Any], str, Any]]:
    """Every text field that may grow: (container, key or index, kind)."""
    slots: list[tuple[Any, Any, str]] = []
    for trace in _traces(episode):
        for turn in trace.get("turns") or []:
            slots.append((turn["execution"], "stdout", "table"))
            slots.append((turn, "reasoning", "prose"))
        cells = trace.get("code_cells") or []
        for i in range(len(cells)):
            slots.append((cells, i, "comment"))
    return slots


def inflate(episode: dict[str, Any], rng: random.Random, target: int) -> dict[str, Any]:
    runs = episode["consistency_traces"]
    want = rng.randint(3, 7)
    if runs and len(runs) < want:
        extra = [orjson.loads(orjson.dumps(runs[i % len(runs)])) for i in range(want - len(runs))]
        runs.extend(extra)
        verified, meta = triangulate(episode["teacher_gold_trace"], runs)
        episode["verified"] = verified
        episode["triangulation_metadata"] = meta
    size = len(orjson.dumps(episode))
    slots = _slots(episode)
    deficit = int(target * rng.uniform(0.6, 1.4)) - size
    if deficit <= 0 or not slots:
        return episode
    share = deficit // len(slots)
    for container, key, kind in slots:
        old = container[key] or ""
        if kind == "table":
            container[key] = f"{old}\n{_table(rng, share)}" if old else _table(rng, share)
        elif kind == "prose":
            container[key] = f"{old} {_prose(rng, share)}"
        else:
            comment = "\n".join(f"# {line}" for line in _prose(rng, share).split(" the "))
            container[key] = f"{comment}\n{old}"
    sft = episode.get("conversation_for_sft")
    if sft:
        for msg in sft["messages"]:
            if msg["role"] == "user" and msg["content"].startswith("[stdout]"):
                msg["content"] += "\n" + _table(rng, min(share, 2000))
    return episode


def profile_episodes(n: int, seed: int = 0, target: int = TARGET_BYTES) -> Iterator[dict]:
    """``n`` episodes of about ``target`` bytes (0.6–1.4× spread), deterministic in seed."""
    for i, episode in enumerate(generate_episodes(n, seed)):
        yield inflate(episode, random.Random(f"profile:{seed}:{i}"), target)
