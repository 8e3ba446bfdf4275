"""End to end: the sample builds, loads with `datasets`, and rebuilds byte-identically."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import datasets
import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml

import builder.pipeline as build_module
from builder.config import BuildConfig, load_config
from builder.pipeline import BuildFailed, BuildReport, build
from builder.sessions.db import DatabaseUnreachable
from schemas.tables import TABLES

ROOT = Path(__file__).resolve().parents[2]


def card_yaml(folder: Path) -> dict:
    text = (folder / "README.md").read_text()
    return yaml.safe_load(text.split("---\n")[1])


def folder_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_every_declared_config_and_split_loads_with_declared_features(
    sample_build: BuildReport,
) -> None:
    folder = sample_build.out
    meta = card_yaml(folder)
    features = {i["config_name"]: i["features"] for i in meta["dataset_info"]}
    declared = {c["config_name"]: [f["split"] for f in c["data_files"]] for c in meta["configs"]}
    assert set(TABLES) <= set(declared)
    for name, splits in declared.items():
        for split in splits:
            ds = datasets.load_dataset(str(folder), name, split=split)
            assert ds.num_rows == sample_build.manifest["configs"][name]["rows"][split]
            assert [f["name"] for f in features[name]] == list(ds.features)


def test_the_sample_has_rows_in_every_split_of_every_config(sample_build: BuildReport) -> None:
    for name, config in sample_build.manifest["configs"].items():
        assert all(config["rows"][s] > 0 for s in ("train", "validation", "test")), name


def test_streaming_reads_the_same_rows(sample_build: BuildReport) -> None:
    folder = str(sample_build.out)
    eager = datasets.load_dataset(folder, "turns", split="train")
    streamed = list(datasets.load_dataset(folder, "turns", split="train", streaming=True))
    assert len(streamed) == eager.num_rows
    assert streamed[0] == eager[0]


def test_no_loading_script_and_plain_arrow_types(sample_build: BuildReport) -> None:
    folder = sample_build.out
    assert not list(folder.rglob("*.py"))
    for path in folder.rglob("*.parquet"):
        schema = pq.read_schema(path)
        text = str(schema)
        assert "large_string" not in text and "large_list" not in text, path
        assert path.name.split("-")[0] in {"train", "validation", "test"}


def test_manifest_accounts_for_every_input_line(sample_build: BuildReport) -> None:
    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    assert manifest == json.loads(json.dumps(sample_build.manifest, default=str))
    for entry in manifest["inputs"]:
        assert entry["valid"] + entry["rejected"] + entry["blank"] == entry["lines"]
        assert len(entry["sha256"]) == 64
    questions = pq.read_table(sample_build.out / "questions").column("question_id").to_pylist()
    assert len(questions) == len(set(questions))


def test_a_trace_that_submitted_nothing_has_a_null_answer(sample_build: BuildReport) -> None:
    traces = pl.read_parquet(sample_build.out / "traces" / "*.parquet")
    unanswered = traces.filter(~pl.col("submitted"))
    assert unanswered.height > 0 and unanswered["final_answer"].null_count() == unanswered.height
    assert traces.filter(pl.col("submitted"))["final_answer"].null_count() == 0


def test_rebuild_is_byte_identical(sample_build: BuildReport, tmp_path: Path) -> None:
    config = replace(
        load_config(ROOT / "dataset.toml"),
        out=tmp_path / "ds",
        rejects=tmp_path / "rejects.jsonl",  # beside the output, as the manifest records it
    )
    again = build(config)
    assert folder_digest(again.out) == folder_digest(sample_build.out)


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_too_many_rejects_refuses_and_keeps_previous_build(tmp_path: Path) -> None:
    good = (ROOT / "data/episodes/episodes.jsonl").read_bytes().splitlines()[:20]
    source = write_lines(tmp_path / "in.jsonl", good)
    config = BuildConfig(
        episodes=(str(source),), out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl"
    )
    first = build(config)
    before = folder_digest(first.out)
    write_lines(source, [*good, b"{not json", b'{"episode_id": 3}'])
    with pytest.raises(BuildFailed, match="2 of 22 records rejected"):
        build(config)
    assert folder_digest(first.out) == before
    # The build left in place keeps its rejects file; the refused one's are beside it.
    assert (tmp_path / "rejects.jsonl").read_text() == ""
    refused = (tmp_path / "rejects.refused.jsonl").read_text().splitlines()
    rejects = [json.loads(line) for line in refused]
    assert [(r["line"], r["kind"]) for r in rejects] == [(21, "invalid_json"), (22, "schema")]
    leftovers = [p.name for p in tmp_path.glob(".ds.*")]
    assert not leftovers, "work folders and the lock file are cleaned up"


def test_a_build_stopped_by_the_environment_leaves_no_rejects_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rejects file in place stays the one of the build in place: a build that stops
    before it is done (here: the sessions database goes away) removes its partial file and
    the folders it made for it."""
    good = (ROOT / "data/episodes/episodes.jsonl").read_bytes().splitlines()[:20]
    source = write_lines(tmp_path / "in.jsonl", [*good, b"{not json"])
    rejects = tmp_path / "new" / "reports" / "rejects.jsonl"
    config = BuildConfig(episodes=(str(source),), out=tmp_path / "ds", rejects=rejects)

    def unreachable(*_: object) -> None:
        raise DatabaseUnreachable("postgresql://db: cannot connect: server closed the connection")

    monkeypatch.setattr(build_module, "read_sessions", unreachable)
    with pytest.raises(DatabaseUnreachable):
        build(config)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_manifest_exclusions_equal_those_of_the_published_tables(
    sample_build: BuildReport,
) -> None:
    """Counted a bucket at a time during the export; recounted here over the whole tables."""
    from builder.derive.eligibility import exclusion_counts

    folder = sample_build.out
    tables = {name: pl.scan_parquet(folder / name / "*.parquet") for name in ("episodes", "turns")}
    counted = sample_build.manifest["training_exclusions"]
    assert counted == exclusion_counts(tables)
    assert counted["not_verified"] > 0


def test_an_empty_sessions_database_still_declares_its_configs(tmp_path: Path) -> None:
    from builder.cli.episodes import main

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    assert main(["sessions", "init", url]) == 0
    config = BuildConfig(
        episodes=(str(ROOT / "data/episodes/episodes.jsonl"),),
        sessions=url,
        out=tmp_path / "out",
        rejects=tmp_path / "rejects.jsonl",
    )
    rows = build(config).manifest["configs"]
    assert (
        rows["sessions"]["rows"]
        == rows["actions"]["rows"]
        == {
            "train": 0,
            "validation": 0,
            "test": 0,
        }
    )
    assert sum(rows["sft"]["rows"].values()) > 0
