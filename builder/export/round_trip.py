"""The manifest's ``round_trip`` section: what ``episodes export-jsonl`` cannot give back.

The tables plus each episode's ``line_patch`` give back every accepted line as a JSON value
(``schemas.lines``), but for two things the build changes on purpose: a hook value larger
than ``hook_value_limit`` is kept only as its bounded summary, and a secret is redacted.
Both are counted here, the hook values by the JSON path they sit at in the line (as its
layout spells it), read back from the written ``hooks``, ``traces`` and ``episodes`` files,
and the redacted values by the column that holds them.
``rule`` is the version of the rebuild the patches were computed against: a restore with
another rule refuses the folder rather than give back wrong lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.redact.patterns import PLACEHOLDER
from schemas.layouts import LAYOUTS_BY_NAME, layout_path
from schemas.lines import REBUILD_RULE
from schemas.tables import REDACTED_ROLES, TABLES, columns_with_role

# The tables an episode's line is rebuilt from (``schemas.lines``)
LINE_TABLES = ("questions", "episodes", "traces", "turns", "hooks", "corrections", "messages")

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


def redacted_values(out: Path, files: Iterable[str]) -> dict[str, int]:
    """Values holding a redaction placeholder, by ``table.column`` of the tables a line is
    rebuilt from: the fields of the lines that come back redacted."""
    files = list(files)
    marker = PLACEHOLDER.split("{", 1)[0]  # "<REDACTED:"
    found: dict[str, int] = {}
    for table in LINE_TABLES:
        paths = _files(out, files, table)
        columns = columns_with_role(TABLES[table], *REDACTED_ROLES)
        if not paths or not columns:
            continue
        hits = [_holds(c, TABLES[table].field(c).type, marker) for c in columns]
        counts = pl.scan_parquet(paths).select(hits).collect().row(0)
        found |= {f"{table}.{c}": int(n) for c, n in zip(columns, counts, strict=True) if n}
    return dict(sorted(found.items()))


def _holds(name: str, type_: pa.DataType, marker: str) -> pl.Expr:
    """How many values of a column (a list of strings: any element) hold ``marker``."""
    if pa.types.is_list(type_):
        inner = pl.element().str.contains(marker, literal=True)
        return pl.col(name).list.eval(inner).list.any().fill_null(False).sum()
    return pl.col(name).str.contains(marker, literal=True).fill_null(False).sum()


def round_trip_section(
    out: Path, files: Iterable[str], redaction: Mapping[str, Any]
) -> dict[str, Any]:
    redacted = sum(redaction.get("by_kind", {}).values()) if redaction.get("enabled") else 0
    return {
        "rule": REBUILD_RULE,
        "not_round_tripped": {
            "bounded_hook_values": bounded_values(out, files),
            "redacted_secrets": redacted,
            # scanned only when something was redacted: a build with none reads nothing
            "redacted_values": redacted_values(out, files) if redacted else {},
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
