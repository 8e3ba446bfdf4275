"""The questions of earlier segments, for the episodes of a later one.

An episode's question row lives in the segment where the question was first seen. A later
segment's episodes still need its text and difficulty (their prompts), exactly as that
segment published them (redacted), and its split (that of its published file). Those fields
of every published question go into a small on-disk index (SQLite, keyed by id) as each
segment is exported, so a lookup costs what the segment needs, not what came before it, and
memory does not grow with the number of questions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from builder.export.buckets import LOOKUP_SCHEMA
from schemas.tables import empty_table
from schemas.vocabulary import SPLITS

# The question columns derive joins, with their declared types.
COLUMNS = dict(pl.from_arrow(empty_table(LOOKUP_SCHEMA)).schema)  # type: ignore[union-attr]


class QuestionIndex:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        columns = ", ".join(f"{name} TEXT" for name in list(COLUMNS)[1:])
        self._db.execute(f"CREATE TABLE questions (question_id TEXT PRIMARY KEY, {columns})")
        self._waiting: list[Path] = []

    def add_published(
        self, dataset: Path, segment: str, files: Sequence[str] | None = None
    ) -> None:
        """Index the ``questions`` rows segment ``segment`` wrote into ``dataset`` (``files``:
        its files relative to ``dataset``, when known). Indexed at the next lookup, every
        segment waiting in one read: a rebuild that reuses fifty segments reads them once."""
        if files is None:
            found = (
                sorted((dataset / "questions").glob(f"{s}-{segment}-*.parquet")) for s in SPLITS
            )
            self._waiting += [path for paths in found for path in paths]
        else:
            self._waiting += [dataset / f for f in files if f.startswith("questions/")]

    def _index_waiting(self) -> None:
        files, self._waiting = self._waiting, []
        if not files:
            return
        # A published file's name starts with its split: ``{split}-{segment}-….parquet``.
        named = pl.scan_parquet(files, include_file_paths="_file").select(
            *list(COLUMNS)[:-1],
            split=pl.col("_file").str.extract(r"([^/\\]+?)-[^/\\]*$"),
        )
        rows = named.collect().iter_rows()
        with self._db:
            marks = ", ".join("?" for _ in COLUMNS)
            self._db.executemany(f"INSERT INTO questions VALUES ({marks})", rows)

    def get(self, ids: pl.Series) -> pl.DataFrame:
        """The indexed rows among ``ids`` (ids not indexed are left out), in id order."""
        self._index_waiting()
        query = (
            "SELECT * FROM questions WHERE question_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY question_id"
        )
        rows = self._db.execute(query, (json.dumps(ids.to_list()),)).fetchall()
        return pl.DataFrame(rows, schema=COLUMNS, orient="row")

    def close(self) -> None:
        self._db.close()


def lookup(index: QuestionIndex, tables: Path) -> pl.DataFrame:
    """The earlier segments' questions that the episodes in staging folder ``tables`` ask."""
    episodes = pl.read_parquet(tables / "episodes.parquet", columns=["question_id"])
    return index.get(episodes.get_column("question_id").unique())
