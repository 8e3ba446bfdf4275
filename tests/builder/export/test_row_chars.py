"""Characters per row counted as a config is written (``ConfigWriter.chars``) are the
numbers the report counts from the written files (``builder.report.lengths``, the oracle):
file by file, on several configs (``dpo``'s longest of chosen and rejected among them),
pieces that leave a split empty, and shards cut short."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from builder.config import load_config
from builder.export.writer import ConfigWriter, row_chars
from builder.pipeline import BuildReport, build
from builder.report import card_images, lengths
from builder.report.folder import BuildFolder
from schemas.objectives import OBJECTIVES
from schemas.row_text import TEXT_COLUMNS
from schemas.vocabulary import SPLITS

ROOT = Path(__file__).resolve().parents[3]
GROUPS = dict.fromkeys(SPLITS, 5)


def recounted(name: str, path: Path) -> np.ndarray:
    """The report's count of one written file."""
    columns = lengths.text_columns(name, pq.read_schema(path).names)
    parts = [np.zeros(0, np.int32)]
    parts += [lengths.row_chars(name, f) for f in lengths._file_batches(path, columns)]
    return np.concatenate(parts)


def sample_rows(build_report: BuildReport, name: str) -> pl.DataFrame:
    folder = BuildFolder(build_report.out)
    return folder.read(name, split=True)


def pieces_of(rows: pl.DataFrame, case: str, rng: random.Random) -> list[pl.DataFrame]:
    if case == "as built":
        cuts = sorted(rng.sample(range(1, rows.height), min(3, rows.height - 1)))
        bounds = [0, *cuts, rows.height]
        return [rows.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    if case == "train only":  # validation and test get no file
        train = rows.filter(pl.col("split") == "train")
        return [train.head(3), train.head(0), train.slice(3)]
    # nulls where a column may have them, and a split outside the vocabulary (not written)
    shuffled = rows.sample(fraction=1.0, seed=rng.randint(0, 99), shuffle=True)
    odd = shuffled.with_columns(
        split=pl.when(pl.int_range(pl.len()) % 11 == 0).then(pl.lit("other")).otherwise("split")
    )
    return [odd.head(5), odd.slice(5)]


@pytest.mark.parametrize("case", ["as built", "train only", "shuffled"])
@pytest.mark.parametrize("name", ["sft", "sft_turns", "dpo", "prm_stepwise", "self_correction"])
def test_counts_while_writing_are_the_recount_from_the_files(
    sample_build: BuildReport, tmp_path: Path, name: str, case: str
) -> None:
    rows = sample_rows(sample_build, name)
    assert rows.height > 3
    writer = ConfigWriter(tmp_path, name, OBJECTIVES[name], 7, GROUPS, "00001")
    for frame in pieces_of(rows, case, random.Random(f"{name}{case}")):
        writer.write(frame)
    writer.close()
    assert writer.files and set(writer.chars) == set(writer.files)
    for path in writer.files:
        assert np.array_equal(writer.chars[path], recounted(name, path)), path.name


def test_dpo_counts_the_longer_of_chosen_and_rejected() -> None:
    message = {"role": "assistant", "content": ""}
    frame = pl.DataFrame(
        {
            "prompt": [[{**message, "content": "abc"}], []],
            "chosen": [[{**message, "content": "x" * 10}], [{**message, "content": "é"}]],
            "rejected": [[{**message, "content": "y" * 4}], None],
        }
    )
    counts = row_chars("dpo", frame)
    assert counts is not None and counts.tolist() == [13, 1]
    assert np.array_equal(counts, lengths.row_chars("dpo", frame))


def test_a_config_without_text_is_not_counted() -> None:
    assert row_chars("episodes", pl.DataFrame({"episode_id": ["a"]})) is None
    assert row_chars("dpo", pl.DataFrame({"prompt": ["a"]})) is None  # no chosen nor rejected


def test_a_build_hands_the_card_every_training_files_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: dict[str, Any] = {}
    images = card_images.write_card_images

    def keeping(*args: Any, **kwargs: Any) -> dict[str, str]:
        handed.update(args[3])
        return images(*args, **kwargs)

    monkeypatch.setattr(card_images, "write_card_images", keeping)
    config = load_config(ROOT / "dataset.toml")
    report = build(replace(config, out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"))
    folder = BuildFolder(report.out)
    expected = {
        str(p.relative_to(folder.path)): (n, p)
        for n in folder.configs("objective")
        if n in TEXT_COLUMNS
        for p in folder.files(n)
    }
    assert set(handed) == set(expected)
    for path, (name, file) in expected.items():
        assert np.array_equal(handed[path], recounted(name, file)), path
    assert any("-sessions-" in path for path in handed)  # the sessions' segment too
