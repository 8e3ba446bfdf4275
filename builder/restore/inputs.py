"""A build's inputs written back from its tables, for ``build --from``: each episode file
and question bank it read (the lines it accepted, each at its own line number, blank lines
between), and its sessions as database rows.

Each restored file is named for the input it stands for (``Restored.names``), so the rows of
the new build record the same source file and line as the old one's; and its episode files
keep the segments they were read in (the data files' names number them), so the new build
cuts its output the same way.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.restore.episodes import episode_records, line_text
from builder.restore.folder import DamagedBuild, read_table
from builder.restore.sessions import session_rows
from schemas.episode import Question
from schemas.lines import path_steps
from schemas.manifest import read_manifest
from schemas.tables import JSON, QUESTIONS, columns_with_role

# The fields of a bank's question that are ``questions`` columns: the JSON ones as canonical
# JSON text, the others as they are; ``id``, ``capture_id``, ``created_at`` and the record's
# unknown fields (``extra_fields``, keyed by path) apart
_BANK_JSON = tuple(c for c in columns_with_role(QUESTIONS, JSON) if c in Question.model_fields)
_BANK_FIELDS = tuple(
    name
    for name in QUESTIONS.names
    if name in Question.model_fields and name not in (*_BANK_JSON, "id", "capture_id", "created_at")
)


@dataclass
class Restored:
    episodes: list[str] = field(default_factory=list)  # restored files, in reading order
    banks: dict[str, list[str]] = field(default_factory=lambda: {"synthetic": [], "llm": []})
    names: dict[str, str] = field(default_factory=dict)  # restored file -> its name there
    segments: list[tuple[str, ...]] = field(default_factory=list)
    sessions: tuple[pa.Table, pa.Table] | None = None
    sessions_name: str | None = None  # the database as the build named it


def _write(path: Path, numbered: list[tuple[int, str]]) -> None:
    """Records at their line numbers; blank lines where the input had anything else."""
    with path.open("w", encoding="utf-8") as f:
        at = 1
        for number, text in sorted(numbered):
            f.write("\n" * max(number - at, 0) + text + "\n")
            at = number + 1


def bank_record(row: dict[str, Any]) -> dict[str, Any]:
    """A question bank's record that reads back as ``row`` (a ``questions`` row)."""
    record: dict[str, Any] = {"id": row["capture_id"] or row["question_id"]}
    record |= {name: row[name] for name in _BANK_FIELDS if row[name] is not None}
    record |= {name: json.loads(row[name]) for name in _BANK_JSON if row[name] is not None}
    created: datetime | None = row["created_at"]
    if created is not None:
        record["created_at"] = created.isoformat()
    for path, value in json.loads(row.get("extra_fields") or "{}").items():
        steps = path_steps(path)  # a bank record's unknown fields are its own keys
        if len(steps) != 1 or not isinstance(steps[0], str) or steps[0] in record:
            raise ValueError(f"extra_fields holds {path!r}, no field a bank record can have")
        record[steps[0]] = value
    return record


def _order(manifest: dict[str, Any]) -> dict[str, int]:
    return {item["path"]: i for i, item in enumerate(manifest.get("inputs") or [])}


def restore_inputs(folder: Path, work: Path) -> Restored:
    """Write ``folder``'s inputs into ``work``; what was written and what it stands for."""
    manifest = read_manifest(folder)
    order = _order(dict(manifest))
    out = Restored()
    by_file: dict[str, list[tuple[int, str]]] = defaultdict(list)
    segment_of: dict[str, str] = {}
    for record in episode_records(folder):
        text = line_text(record)
        by_file[record.source_file].append((record.source_line, text))
        segment_of.setdefault(record.source_file, record.segment)
    runs: dict[str, list[str]] = defaultdict(list)
    for i, name in enumerate(sorted(by_file, key=lambda n: (order.get(n, len(order)), n))):
        path = work / f"episodes-{i:05d}.jsonl"
        _write(path, by_file[name])
        out.episodes.append(str(path))
        out.names[str(path)] = name
        runs[segment_of[name]].append(str(path))
    out.segments = [tuple(runs[s]) for s in sorted(runs)]
    questions = read_table(folder, "questions")
    if questions is not None:
        banks = questions.filter(pl.col("source").is_in(list(out.banks)))
        files = banks.select("source", "source_file").unique(maintain_order=True).rows()
        files.sort(key=lambda f: (f[0] != "synthetic", order.get(f[1], len(order)), f[1]))
        for i, (kind, name) in enumerate(files):
            rows = banks.filter(pl.col("source_file") == name).iter_rows(named=True)
            path = work / f"questions-{i:05d}.jsonl"
            try:
                numbered = [(r["source_line"], json.dumps(bank_record(r))) for r in rows]
            except ValueError as exc:  # a table changed by hand, or by another program
                raise DamagedBuild(f"{folder}: questions: {exc}") from exc
            _write(path, numbered)
            out.banks[kind].append(str(path))
            out.names[str(path)] = name
    out.sessions = session_rows(folder)
    sessions = manifest.get("sessions") or {}
    out.sessions_name = sessions.get("source") if out.sessions is not None else None
    return out
