"""One JSON line per accepted episode, from a build folder's tables alone.

Each episode's rows of every table are rebuilt into its line (``schemas.lines.rebuild``,
the rule the normalize stage computed the episode's ``line_patch`` against) and its patch
applied: the line as captured, in its own layout, after redaction. Lines come in input
order (source file, then line).

Rows are gathered per episode in Python: a line is a nested JSON value, and its pieces sit
in seven tables.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from builder.errors import UsageError
from builder.restore.folder import read_table
from schemas.lines import REBUILD_RULE, EpisodeRows, apply_patch, rebuild
from schemas.manifest import read_manifest

CHILD_TABLES = ("traces", "turns", "hooks", "corrections", "messages")


class NotRestorable(UsageError):
    """A build from before the tables kept everything a line held."""


def _grouped(frame: pl.DataFrame | None) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if frame is None:
        return out
    for row in frame.iter_rows(named=True):
        out[row["episode_id"]].append(row)
    return out


@dataclass(frozen=True)
class EpisodeRecord:
    line: dict[str, Any]  # the line's JSON value
    source_file: str  # the input it was read from, and its line there
    source_line: int
    segment: str  # the segment of the build it was read in ("00001")


def episode_lines(folder: Path) -> Iterator[dict[str, Any]]:
    """The episodes of a build folder as the JSON values of their lines."""
    return (record.line for record in episode_records(folder))


def _segment(name: str) -> str:
    """``train-00001-00000-of-00001-….parquet`` -> ``00001``."""
    parts = name.split("-")
    return parts[1] if len(parts) > 2 else ""


def episode_records(folder: Path) -> Iterator[EpisodeRecord]:
    """The episodes of a build folder, in input order (source file, then line)."""
    rule = (read_manifest(folder).get("round_trip") or {}).get("rule")
    if rule is None:
        raise NotRestorable(
            f"{folder}: built before the tables kept every field of a line (its manifest "
            "has no round_trip); build it again from its JSONL with a newer builder"
        )
    if rule != REBUILD_RULE:
        raise NotRestorable(
            f"{folder}: its lines were kept under rebuild rule {rule}, this builder knows rule "
            f"{REBUILD_RULE}; export them with the builder that made it"
        )
    files = sorted((folder / "episodes").glob("*.parquet"))
    if not files:
        return
    episodes = pl.concat(
        [pl.read_parquet(f).with_columns(segment=pl.lit(_segment(f.name))) for f in files],
        how="diagonal_relaxed",
    )
    questions = read_table(folder, "questions")
    texts: dict[str, dict[str, Any]] = {}
    if questions is not None:
        for q in questions.select("question_id", "question_text", "hint").iter_rows(named=True):
            texts.setdefault(q["question_id"], q)
    children = {name: _grouped(read_table(folder, name)) for name in CHILD_TABLES}
    ordered = episodes.sort("source_file", "source_line", maintain_order=True)
    for ep in ordered.iter_rows(named=True):
        eid = ep["episode_id"]
        rows = EpisodeRows(
            episode=ep,
            question=texts.get(ep["question_id"]),
            **{name: children[name].get(eid, []) for name in CHILD_TABLES},
        )
        line = rebuild(rows)
        if ep["line_patch"] is not None:
            try:
                line = apply_patch(line, json.loads(ep["line_patch"]))
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise NotRestorable(
                    f"{folder}: episode {eid!r}: its line_patch does not fit its rows "
                    f"({type(exc).__name__}: {exc}); were the folder's files changed after "
                    "the build?"
                ) from exc
        yield EpisodeRecord(line, ep["source_file"], ep["source_line"], ep["segment"])


def write_lines(lines: Iterator[dict[str, Any]], out: TextIO) -> int:
    """JSON Lines as Python's ``json`` writes them (``NaN`` and ``Infinity`` as the bare
    tokens the capture side writes); returns the count."""
    n = 0
    for line in lines:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        n += 1
    return n
