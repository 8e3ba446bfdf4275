"""Write one config of the dataset folder: assign each row its split, then shard per split.

A row's split comes from its ``question_id`` (or, for child tables, its episode's) joined to
the split assignment, so a question's rows share one split in every config. Joins keep the
left order, and every input frame is deterministically ordered, so two builds of the same
inputs write the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from builder.fs.parquet import ARROW_VIEWS, ShardedWriter, conform
from schemas.row_text import TEXT_COLUMNS, row_chars_expr
from schemas.vocabulary import SPLITS


def row_chars(name: str, frame: pl.DataFrame) -> np.ndarray | None:
    """Characters of the text a trainer reads, per row of ``frame`` (a piece of training
    config ``name``), as int32; None for a config without text columns."""
    expr = row_chars_expr(name, frame.schema)
    if expr is None:  # not a training config's piece: left for the report to count
        return None
    return np.asarray(frame.select(expr).to_series().to_numpy(), dtype=np.int32)


@dataclass(frozen=True)
class SplitKeys:
    """The split of every question id and of every episode id: small frames, joined to
    each piece of a config as it is written."""

    by_question: pl.DataFrame  # question_id, split
    by_episode: pl.DataFrame  # episode_id, split

    @classmethod
    def of(cls, splits: pl.DataFrame, episodes: pl.LazyFrame) -> SplitKeys:
        by_question = splits.select("question_id", "split")
        by_episode = (
            episodes.select("episode_id", "question_id")
            .collect()
            .join(by_question, on="question_id", how="left")
            .select("episode_id", "split")
        )
        return cls(by_question, by_episode)

    @classmethod
    def of_questions(cls, splits: pl.DataFrame) -> SplitKeys:
        """Keys for rows that carry their ``question_id`` (session rows)."""
        no_episodes = pl.DataFrame(schema={"episode_id": pl.String, "split": pl.String})
        return cls(splits.select("question_id", "split"), no_episodes)

    def attach(self, frame: pl.LazyFrame) -> pl.LazyFrame:
        """Add ``split``; child tables reach their question through ``episode_id``."""
        if "question_id" in frame.collect_schema().names():
            key, keys = "question_id", self.by_question
        else:
            key, keys = "episode_id", self.by_episode
        return frame.join(keys.lazy(), on=key, how="left", maintain_order="left")


class ConfigWriter:
    """One segment of one config: each collected piece is checked for rows without a split,
    then appended to its split's shards
    (``{out}/{name}/{split}-{segment}-NNNNN-of-NNNNN-{digest}.parquet``)."""

    def __init__(
        self,
        out: Path,
        name: str,
        schema: pa.Schema,
        max_rows_per_file: int,
        group_rows: Mapping[str, int],  # split -> rows per row group (``split_group_rows``)
        segment: str,
    ) -> None:
        self.out, self.name, self.schema, self.segment = out, name, schema, segment
        self.max_rows_per_file, self.group_rows = max_rows_per_file, group_rows
        self.files: list[Path] = []
        self.digests: dict[Path, str] = {}  # file -> sha256
        # file -> characters per row (``row_chars``), for the card's length chart: counted
        # here, on the writer's thread, from the piece in memory, rather than read back
        # from the written files at the end of the build.
        self.chars: dict[Path, np.ndarray] = {}
        self._writers: dict[str, ShardedWriter] = {}
        self._chars: dict[str, list[np.ndarray]] | None = {} if name in TEXT_COLUMNS else None

    def write(self, collected: pl.DataFrame) -> None:
        unassigned = collected.get_column("split").null_count()
        if unassigned:
            missing = f"{unassigned} rows have no split (missing question_id?)"
            raise RuntimeError(f"{self.name}: {missing}")
        if not collected.height:
            return
        # Each split's rows are filtered in Polars, whose strings are views (the filter
        # moves 16-byte views, not the text), then leave Polars and are cast to the
        # declared schema: the text is copied once. Filtering in Arrow after the cast
        # copied it twice, the second time through a gather of 64-bit-offset strings.
        split = collected.get_column("split")
        chars = row_chars(self.name, collected) if self._chars is not None else None
        if chars is None:
            self._chars = None  # no count of this piece: the report counts from the files
        for name in SPLITS:
            mask = split == name
            rows = int(mask.sum())
            if not rows:
                continue
            whole = rows == collected.height
            piece = collected if whole else collected.filter(mask)
            part = conform(piece.to_arrow(compat_level=ARROW_VIEWS), self.schema)
            self._writer(name).write(part)
            if self._chars is not None and chars is not None:
                self._chars.setdefault(name, []).append(chars if whole else chars[mask.to_numpy()])

    def _writer(self, split: str) -> ShardedWriter:
        if split not in self._writers:
            self._writers[split] = ShardedWriter(
                self.out / self.name,
                f"{split}-{self.segment}",
                self.schema,
                self.max_rows_per_file,
                self.group_rows[split],
            )
        return self._writers[split]

    def close(self) -> dict[str, int]:
        """Rows per split. An empty split gets no file: ``datasets`` cannot load a split
        without data, so the card declares only the splits that have rows."""
        for split, writer in self._writers.items():
            files = writer.close()
            self.files += files
            self.digests |= writer.digests
            if self._chars is not None:
                self.chars |= _by_file(writer.file_rows, self._chars.get(split, []))
        return {s: self._writers[s].rows if s in self._writers else 0 for s in SPLITS}


def _by_file(file_rows: Mapping[Path, int], pieces: list[np.ndarray]) -> dict[Path, np.ndarray]:
    """A split's row counts, in written order, cut into its files by their rows; nothing if
    the numbers do not add up (the report then counts from the files)."""
    counts = np.concatenate([np.zeros(0, dtype=np.int32), *pieces])
    if sum(file_rows.values()) != len(counts):
        return {}
    ends = np.cumsum(list(file_rows.values()))
    return dict(zip(file_rows, np.split(counts, ends[:-1]), strict=True))
