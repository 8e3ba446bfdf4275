"""The ``hooks`` rows of a trace: one per checkpoint, whichever listing it came from."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from builder.contract.stored_values import bound_stored_value
from builder.normalize.hook_dag import check_hook_dag, unrecorded_names
from builder.normalize.rows import HookRow, Rows
from builder.normalize.values import Dump, json_text
from schemas import vocabulary
from schemas.episode import Hook


def hook_name(hook: Hook) -> str:
    """The variable's name, else the code line (the seeds' capture code wrote ``""`` for an
    unnamed hook, so every unnamed hook of a trace would otherwise share one name)."""
    return hook.variable_name or hook.code_line


def hook_rows(
    out: Rows, trace_id: str, episode_id: str, trace: Any, limit: int, dump: Dump
) -> tuple[int, list[str], int]:
    """One row per checkpoint; returns (rows added, failed checks, values bounded). When a
    trace lists hooks both per turn and at trace level, the listings describe the same
    checkpoints: they are merged by (name, occurrence), and any disagreement is a
    ``hook_listing_mismatch``."""
    listed: list[tuple[int | None, Hook, str]] = [
        (turn.turn_index, hook, "turn")
        for turn in trace.turns or []
        for hook in turn.execution.hooks
    ]
    failed: list[str] = []
    if listed and trace.hooks:
        listed, mismatch = merge_listings(listed, trace.hooks)
        if mismatch:
            failed.append(vocabulary.HOOK_LISTING_MISMATCH)
    elif trace.hooks:
        listed = [(None, hook, "trace") for hook in trace.hooks]
    edges = ((hook_name(h), h.depends_on) for _, h, _ in listed)
    failed += check_hook_dag(edges, lambda: unrecorded_names(trace))
    rows = out["hooks"]
    n_bounded = 0
    for i, (turn_index, hook, listed_in) in enumerate(listed):
        value = json_text(hook, "value", dump)
        bounded = False
        if value is not None:
            value, bounded = bound_stored_value(value, limit)
            n_bounded += bounded
        rows.append(
            HookRow(
                trace_id=trace_id,
                hook_index=i,
                episode_id=episode_id,
                turn_index=turn_index,
                name=hook_name(hook),
                code_line=hook.code_line,
                variable_name=hook.variable_name,
                value_hash=hook.value_hash,
                value=value,
                value_bounded=bounded,
                description=hook.description,
                depends_on=hook.depends_on,
                listed_in=listed_in,
            )
        )
    return len(listed), failed, n_bounded


def occurrence_keys(hooks: Sequence[Hook]) -> list[tuple[str, int]]:
    """Each hook's (name, occurrence of that name): how two listings of one trace's hooks
    are paired (``merge_listings``, and the explanation of a mismatch)."""
    seen: Counter[str] = Counter()
    keys = []
    for hook in hooks:
        name = hook_name(hook)
        keys.append((name, seen[name]))
        seen[name] += 1
    return keys


def merge_listings(
    turn_hooks: list[tuple[int | None, Hook, str]], trace_hooks: list[Hook]
) -> tuple[list[tuple[int | None, Hook, str]], bool]:
    def keyed(hooks: list[Hook]) -> dict[tuple[str, int], Hook]:
        return dict(zip(occurrence_keys(hooks), hooks, strict=True))

    at_trace = keyed(trace_hooks)
    at_turns = keyed([h for _, h, _ in turn_hooks])
    merged: list[tuple[int | None, Hook, str]] = []
    mismatch = at_trace.keys() != at_turns.keys()
    for (turn_index, hook, _), key in zip(turn_hooks, at_turns, strict=True):
        twin = at_trace.get(key)
        if twin is not None and (twin.value_hash, twin.code_line) != (
            hook.value_hash,
            hook.code_line,
        ):
            mismatch = True
        merged.append((turn_index, hook, "both" if twin is not None else "turn"))
    merged += [(None, h, "trace") for key, h in at_trace.items() if key not in at_turns]
    return merged, mismatch
