"""The index of published questions that later segments look their questions up in."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from builder.export.lookup import COLUMNS, QuestionIndex, lookup


def publish(dataset: Path, segment: str, split: str, ids: list[str]) -> None:
    folder = dataset / "questions"
    folder.mkdir(parents=True, exist_ok=True)
    frame = pl.DataFrame(
        {
            "question_id": ids,
            "question_text": [f"text of {i}" for i in ids],
            "normalized_text": [f"normalized {i}" for i in ids],
            "difficulty": ["EASY"] * len(ids),
            "hint": ["not indexed"] * len(ids),
        }
    )
    frame.write_parquet(folder / f"{split}-{segment}-00000-of-00001.parquet")


def test_only_the_asked_and_published_questions_come_back_in_id_order(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    publish(dataset, "00001", "train", ["c3", "a1"])
    publish(dataset, "00001", "test", ["b2"])
    publish(dataset, "00002", "train", ["d4"])
    index = QuestionIndex(tmp_path / "index.sqlite")
    index.add_published(dataset, "00001")
    index.add_published(dataset, "00003")  # a segment that published no question
    found = index.get(pl.Series(["d4", "c3", "zz", "b2"]))
    assert found.columns == list(COLUMNS)
    assert found.get_column("question_id").to_list() == ["b2", "c3"]  # d4: not yet indexed
    # the split is the published file's (its name's first part), what later segments use
    assert found.row(1) == ("c3", "text of c3", "normalized c3", "EASY", "train")
    assert found.row(0)[-1] == "test"
    index.add_published(dataset, "00002")
    assert index.get(pl.Series(["d4"])).height == 1

    staging = tmp_path / "tables"
    staging.mkdir()
    pl.DataFrame({"question_id": ["a1", "a1", "new"]}).write_parquet(staging / "episodes.parquet")
    assert lookup(index, staging).get_column("question_id").to_list() == ["a1"]
    index.close()
