"""A question's rows share one split in every config, and new data never moves a question."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl

from builder.config import BuildConfig
from builder.pipeline import BuildReport, build
from samples.episodes import generate_episodes
from samples.files import write_jsonl

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data/episodes/episodes.jsonl"


def assignments(folder: Path) -> pl.DataFrame:
    """(config, question_id, split) for every row of every config that has a question id."""
    episodes = pl.read_parquet(folder / "episodes/*.parquet").select("episode_id", "question_id")
    frames = []
    for config in sorted(p.name for p in folder.iterdir() if p.is_dir()):
        for path in sorted((folder / config).glob("*.parquet")):
            frame = pl.read_parquet(path)
            if "question_id" not in frame.columns:
                frame = frame.join(episodes, on="episode_id", how="left")
            split = path.name.split("-")[0]
            frames.append(
                frame.select("question_id").with_columns(config=pl.lit(config), split=pl.lit(split))
            )
    return pl.concat(frames)


def test_every_question_has_one_split_in_every_config(sample_build: BuildReport) -> None:
    rows = assignments(sample_build.out)
    assert rows["question_id"].null_count() == 0
    per_question = rows.group_by("question_id").agg(pl.col("split").n_unique().alias("n"))
    assert per_question["n"].max() == 1
    assert rows["config"].n_unique() >= 15


def test_one_normalized_text_never_spans_two_splits(sample_build: BuildReport) -> None:
    splits = pl.read_parquet(sample_build.out / "splits/*.parquet")
    per_text = splits.group_by("normalized_text").agg(pl.col("split").n_unique().alias("n"))
    assert per_text["n"].max() == 1
    # The sample asks some questions with two hints: different ids, one text, one split.
    ids_per_text = splits.group_by("normalized_text").len()
    assert ids_per_text["len"].max() > 1


def test_new_data_leaves_existing_questions_where_they_were(tmp_path: Path) -> None:
    extra = tmp_path / "new.jsonl"
    write_jsonl(extra, generate_episodes(120, seed=4242))
    config = BuildConfig(episodes=(str(SAMPLE),), out=tmp_path / "v1", rejects=tmp_path / "r1")
    before = pl.read_parquet(build(config).out / "splits/*.parquet")
    # a new version keeps the assignment of the one before it (``--previous``)
    grown = replace(
        config,
        episodes=(str(SAMPLE), str(extra)),
        out=tmp_path / "v2",
        split_previous=str(tmp_path / "v1"),
    )
    report = build(grown)
    assert report.manifest["splits"]["previous"]["followed"] is True
    after = pl.read_parquet(report.out / "splits/*.parquet")
    assert after.height > before.height
    joined = before.join(after, on="question_id", how="left", suffix="_after")
    assert joined["split_after"].null_count() == 0
    assert (joined["split"] == joined["split_after"]).all()
