"""The manifest's ``round_trip`` section: what ``episodes export-jsonl`` cannot give back.

The tables plus each episode's ``line_patch`` give back every accepted line as a JSON value
(``schemas.lines``), but for two things the build changes on purpose: a hook value larger
than ``hook_value_limit`` is kept only as its bounded summary, and a secret is redacted.
Both are counted here, the hook values by the JSON path they sit at in the line (as its
layout spells it), read back from the written ``hooks``, ``traces`` and ``episodes`` files.
``rule`` is the version of the rebuild the patches were computed against: a restore with
another rule refuses the folder rather than give back wrong lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from schemas.layouts import LAYOUTS_BY_NAME, layout_path
from schemas.lines import REBUILD_RULE

# Where a hook sits in the line (in the model's spelling), by where the capture listed it
_LISTED = {
    "turn": (".turns[*].execution.hooks[*].value",),
    "trace": (".hooks[*].value",),
    "both": (".turns[*].execution.hooks[*].value", ".hooks[*].value"),
}
_TRACE = {"gold": "$.teacher_gold_trace", "consistency": "$.consistency_traces[*]"}


def _files(out: Path, files: Iterable[str], table: str) -> list[Path]:
    return [out / p for p in files if p.startswith(f"{table}/")]


def bounded_values(out: Path, files: Iterable[str]) -> dict[str, int]:
    """Hook values kept only as a bounded summary, by generic JSON path in the line."""
    files = list(files)
    hooks = _files(out, files, "hooks")
    if not hooks:
        return {}
    bounded = (
        pl.scan_parquet(hooks)
        .filter(pl.col("value_bounded"))
        .select("trace_id", "episode_id", "listed_in")
    )
    roles = pl.scan_parquet(_files(out, files, "traces")).select("trace_id", "role")
    layouts = pl.scan_parquet(_files(out, files, "episodes")).select("episode_id", "layout")
    counts = (
        bounded.join(roles, on="trace_id")
        .join(layouts, on="episode_id")
        .group_by("role", "listed_in", "layout")
        .len()
        .collect()
    )
    total: dict[str, int] = {}
    for role, listed_in, layout, n in counts.iter_rows():
        for tail in _LISTED[listed_in]:
            path = _TRACE[role] + tail
            if layout in LAYOUTS_BY_NAME:
                path = layout_path(layout, path)
            total[path] = total.get(path, 0) + n
    return dict(sorted(total.items()))


def round_trip_section(
    out: Path, files: Iterable[str], redaction: Mapping[str, Any]
) -> dict[str, Any]:
    redacted = sum(redaction.get("by_kind", {}).values()) if redaction.get("enabled") else 0
    return {
        "rule": REBUILD_RULE,
        "not_round_tripped": {
            "bounded_hook_values": bounded_values(out, files),
            "redacted_secrets": redacted,
        },
    }


def round_trip_sentence(section: Mapping[str, Any] | None) -> str:
    """The card's one sentence on what the tables give back."""
    if not section:
        return ""
    lost = section["not_round_tripped"]
    bounded = sum(lost["bounded_hook_values"].values())
    caveats = []
    if bounded:
        caveats.append(f"{_count(bounded, 'hook value')} kept only as a bounded summary")
    if lost["redacted_secrets"]:
        caveats.append(_count(lost["redacted_secrets"], "redacted secret"))
    but = f", but for {' and '.join(caveats)}" if caveats else ""
    return (
        f"The tables give back every accepted episode line as it was captured{but} "
        "(`episodes export-jsonl`; `round_trip` in `manifest.json`)."
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
