"""A config's pieces are cut by split in Arrow (``ConfigWriter.write``): the files are the
bytes a cut with Polars' ``partition_by`` (the rows of each split in piece order) gave, on
awkward pieces too."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from builder.export.writer import ConfigWriter
from builder.fs.parquet import ARROW_VIEWS, ShardedWriter
from schemas.vocabulary import SPLITS

SCHEMA = pa.schema(
    [
        ("question_id", pa.string()),
        ("text", pa.string()),
        ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("n", pa.int64()),
    ]
)
GROUPS = dict.fromkeys(SPLITS, 5)


def piece(rng: random.Random, rows: int, splits: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "question_id": [f"{rng.getrandbits(32):08x}" for _ in range(rows)],
            "text": [None if rng.random() < 0.2 else "x" * rng.randint(0, 40) for _ in range(rows)],
            "messages": [
                [{"role": "user", "content": "y" * rng.randint(0, 30)}] * rng.randint(0, 3)
                for _ in range(rows)
            ],
            "n": [rng.randint(0, 9) for _ in range(rows)],
            "split": [rng.choice(splits) for _ in range(rows)],
        }
    )


def digests(paths: list[Path]) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def by_partition(out: Path, pieces: list[pl.DataFrame]) -> dict[str, str]:
    """The cut as ``partition_by`` made it."""
    writers: dict[str, ShardedWriter] = {}
    for frame in pieces:
        parts = frame.partition_by("split", as_dict=True, maintain_order=True)
        for split in SPLITS:
            if (split,) in parts:
                if split not in writers:
                    writers[split] = ShardedWriter(out / "c", f"{split}-00001", SCHEMA, 12, 5)
                writers[split].write(parts[(split,)].to_arrow(compat_level=ARROW_VIEWS))
    return digests([p for w in writers.values() for p in w.close()])


def by_writer(out: Path, pieces: list[pl.DataFrame]) -> dict[str, str]:
    writer = ConfigWriter(out, "c", SCHEMA, 12, GROUPS, "00001")
    for frame in pieces:
        writer.write(frame)
    writer.close()
    return digests(writer.files)


CASES = {
    "every split": [["train", "validation", "test"]] * 4,
    "one split": [["validation"]] * 3,
    "a split only in some pieces": [["train"], ["train", "test"], ["test"], ["train"]],
    "a split not in the vocabulary": [["train", "other"], ["other"]],
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_files_are_those_of_a_cut_by_partition(tmp_path: Path, case: str) -> None:
    rng = random.Random(case)
    pieces = [piece(rng, rng.choice([1, 7, 30]), splits) for splits in CASES[case]]
    pieces.append(piece(rng, 0, ["train"]))  # an empty piece
    expected = by_partition(tmp_path / "partition", pieces)
    assert by_writer(tmp_path / "writer", pieces) == expected
    assert expected


def test_rows_without_a_split_are_refused(tmp_path: Path) -> None:
    frame = piece(random.Random(0), 5, ["train"]).with_columns(
        split=pl.when(pl.col("n") == pl.col("n").max()).then(None).otherwise(pl.col("split"))
    )
    writer = ConfigWriter(tmp_path, "c", SCHEMA, 12, GROUPS, "00001")
    with pytest.raises(RuntimeError, match="have no split"):
        writer.write(frame)
