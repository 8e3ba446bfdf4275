"""The plan's view of the questions: a question's dataset from its bank or its episodes'
CSV, its weight from its episodes and sessions."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from builder.derive.splits.plan import _questions
from builder.normalize.questions import bank_dataset


def test_a_bank_written_per_dataset_names_the_dataset() -> None:
    assert bank_dataset("data/questions/titanic/questions.json", "synthetic") == "titanic"
    assert bank_dataset("data/questions/questions.jsonl", "synthetic") is None
    assert bank_dataset("runs/titanic/questions.json", "episode") is None


def test_the_dataset_is_the_banks_else_the_csv_stem_and_weights_count_rows(
    tmp_path: Path,
) -> None:
    segment = tmp_path / "00001"
    segment.mkdir()
    pl.DataFrame(
        {
            "question_id": ["a", "b", "c"],
            "normalized_text": ["q one", "q two", "q three"],
            "template_name": ["t", None, "t"],
            "dataset": ["named", None, None],
        }
    ).write_parquet(segment / "questions.parquet")
    pl.DataFrame(
        {
            "question_id": ["a", "b", "b", "b"],
            "csv_source": ["data/csv/other.csv", "data/csv/iris.csv", None, "x/iris.tsv"],
        }
    ).write_parquet(segment / "episodes.parquet")
    sessions = pl.DataFrame({"question_id": ["c", "s"], "split_text": ["q three", "a session"]})
    found = _questions(tmp_path, sessions, {}).sort("question_id")
    assert found.select("question_id", "dataset", "weight", "template").to_dicts() == [
        {"question_id": "a", "dataset": "named", "weight": 2, "template": "t"},
        {"question_id": "b", "dataset": "iris", "weight": 4, "template": None},
        {"question_id": "c", "dataset": None, "weight": 2, "template": "t"},
        {"question_id": "s", "dataset": None, "weight": 2, "template": None},
    ]


def test_a_csv_named_data_csv_is_known_by_its_folder(tmp_path: Path) -> None:
    """The capture project keeps each CSV as ``<dataset>/data.csv`` and names the dataset by
    its folder: ten such CSVs are ten datasets, not one called ``data``."""
    segment = tmp_path / "00001"
    segment.mkdir()
    ids = ["a", "b", "c", "d"]
    pl.DataFrame(
        {
            "question_id": ids,
            "normalized_text": ["q one", "q two", "q three", "q four"],
            "template_name": [None] * 4,
            "dataset": [None] * 4,
        }
    ).write_parquet(segment / "questions.parquet")
    sources = ["data/kaggle/titanic/data.csv", "C:\\csv\\iris\\data.csv", "data.csv", "x/data.tsv"]
    pl.DataFrame({"question_id": ids, "csv_source": sources}).write_parquet(
        segment / "episodes.parquet"
    )
    found = _questions(tmp_path, None, {}).sort("question_id")
    assert found.get_column("dataset").to_list() == ["titanic", "iris", "data", "data"]
