"""One JSON line per accepted episode, from a build folder's tables alone.

Each episode's rows of every table are rebuilt into its line (``schemas.lines.rebuild``,
the rule the normalize stage computed the episode's ``line_patch`` against) and its patch
applied: the line as captured, in its own layout, after redaction. Lines come a split of a
segment at a time, in input order (source file, then line) within it.

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
from builder.restore.folder import read_files, read_table
from schemas.lines import REBUILD_RULE, EpisodeRows, apply_patch, rebuild
from schemas.manifest import read_manifest
from schemas.vocabulary import DUPLICATE_JSON_KEY

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
    # the line had a key twice (a failed check), which its rows do not keep: the parsed
    # line holds each key once
    repeated: bool = False


def episode_lines(folder: Path) -> Iterator[dict[str, Any]]:
    """The episodes of a build folder as the JSON values of their lines."""
    return (record.line for record in episode_records(folder))


def _part(name: str) -> str:
    """``train-00001-00000-of-00001-….parquet`` -> ``train-00001``: a split of a segment,
    whose files of every table hold all the rows of its episodes."""
    return "-".join(name.split("-")[:2])


def check_rule(folder: Path) -> None:
    """The folder's patches fit this builder's rebuild, or it says why not."""
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


def episode_records(folder: Path) -> Iterator[EpisodeRecord]:
    """The episodes of a build folder: a split of a segment at a time (so memory holds the
    rows of one), in input order (source file, then line) within it."""
    check_rule(folder)
    questions = read_table(folder, "questions")
    texts: dict[str, dict[str, Any]] = {}
    if questions is not None:
        for q in questions.select("question_id", "question_text", "hint").iter_rows(named=True):
            texts.setdefault(q["question_id"], q)
    parts = sorted({_part(f.name) for f in (folder / "episodes").glob("*.parquet")})
    for part in parts:
        episodes = read_files(sorted((folder / "episodes").glob(f"{part}-*.parquet")))
        assert episodes is not None
        children = {
            name: _grouped(read_files(sorted((folder / name).glob(f"{part}-*.parquet"))))
            for name in CHILD_TABLES
        }
        segment = part.split("-")[1]
        for ep in episodes.sort("source_file", "source_line", maintain_order=True).iter_rows(
            named=True
        ):
            line = _line(folder, ep, texts.get(ep["question_id"]), children)
            repeated = DUPLICATE_JSON_KEY in (ep["checks"] or [])
            yield EpisodeRecord(line, ep["source_file"], ep["source_line"], segment, repeated)


def _line(
    folder: Path,
    ep: dict[str, Any],
    question: dict[str, Any] | None,
    children: dict[str, dict[str, list[dict[str, Any]]]],
) -> dict[str, Any]:
    eid = ep["episode_id"]
    rows = EpisodeRows(
        episode=ep,
        question=question,
        **{name: children[name].get(eid, []) for name in CHILD_TABLES},
    )
    line = rebuild(rows)
    if ep["line_patch"] is None:
        return line
    try:
        return apply_patch(line, json.loads(ep["line_patch"]))
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise NotRestorable(
            f"{folder}: episode {eid!r}: its line_patch does not fit its rows "
            f"({type(exc).__name__}: {exc}); were the folder's files changed after the build?"
        ) from exc


def line_text(record: EpisodeRecord) -> str:
    """``record``'s line as JSON text. A line that had a key twice gets one again: its first
    key written twice, with its value, so a build of the text finds a repeat as the earlier
    one did (the episode does not train) and reads the same value."""
    line = record.line
    text = json.dumps(line, ensure_ascii=False)
    if not record.repeated or not line:
        return text
    key = next(iter(line))
    pair = json.dumps({key: line[key]}, ensure_ascii=False)[1:-1]
    return f"{{{pair}, {text[1:]}"


def write_lines(records: Iterator[EpisodeRecord], out: TextIO) -> int:
    """JSON Lines as Python's ``json`` writes them (``NaN`` and ``Infinity`` as the bare
    tokens the capture side writes; ``line_text``); returns the count."""
    n = 0
    for record in records:
        out.write(line_text(record) + "\n")
        n += 1
    return n
