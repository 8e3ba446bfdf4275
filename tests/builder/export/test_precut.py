"""The bucket cut made while rows are staged: each bucket gets the rows the cut after the
ingest gives it, and whatever it cannot serve is left to that cut, with nothing left behind."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builder.config import BuildConfig, load_config
from builder.export import buckets, precut
from builder.export.buckets import BUCKETED, bucket_count
from builder.ingest.files import ingest_files
from builder.ingest.rejects import RejectsWriter
from builder.pipeline import build, expanded
from builder.pipeline import segments as segment_loop
from schemas.tables import TABLES

ROOT = Path(__file__).resolve().parents[3]


def sample(tmp_path: Path, **changes: object) -> BuildConfig:
    """The sample build's config (episodes, banks, sessions), globs expanded."""
    config = load_config(ROOT / "dataset.toml")
    out = {"out": tmp_path / "ds", "rejects": tmp_path / "rejects.jsonl"}
    return expanded(replace(config, **out, **changes))  # type: ignore[arg-type]


def staged_with(cut: precut.StagedCut, config: BuildConfig, tables: Path) -> list[str]:
    """The sample ingested into ``tables`` with ``cut`` told of every batch; the segments."""
    ingest_files(config, tables, RejectsWriter(None), workers=1, told=cut)
    return sorted(p.name for p in tables.iterdir())


def expected(tables: Path, name: str, count: int, grain: int) -> dict[int, pl.DataFrame]:
    """Each bucket's rows of staging table ``name``, by the definition: the rows whose range
    of ids (of its own question, or its episode's) falls in the bucket, range by range,
    in input order within each range."""
    rows = pl.read_parquet(tables / f"{name}.parquet").with_row_index("_at")
    episodes = pl.read_parquet(tables / "episodes.parquet", columns=["episode_id", "question_id"])
    keyed = rows if "question_id" in rows.columns else rows.join(episodes, on="episode_id")
    fine = keyed.select("_at", _fine=buckets.bucket_index(grain, grain))
    placed = rows.join(fine, on="_at").sort("_fine", "_at")
    placed = placed.with_columns(_bucket=pl.col("_fine") * count // grain)
    return {
        k: placed.filter(pl.col("_bucket") == k).drop("_at", "_fine", "_bucket")
        for k in range(count)
    }


@pytest.mark.parametrize("banks", [True, False])
def test_each_bucket_gets_the_rows_of_its_ranges_in_input_order(
    banks: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first segment that needs more than one bucket is cut while staged (the banks'
    segment, or without banks the episodes', with their child tables); the later ones are
    left to the cut after the ingest, with nothing written for them here."""
    monkeypatch.setattr(buckets, "EPISODES_PER_BUCKET", 20)  # the sample in many buckets
    monkeypatch.setattr(buckets, "SCRATCH_FILE_BYTES", 1 << 16)  # and many scratch files
    without = {} if banks else {"synthetic_questions": (), "llm_questions": ()}
    config = sample(tmp_path, **without)
    served = []
    with precut.StagedCut(tmp_path / "buckets") as cut:
        names = staged_with(cut, config, tmp_path / "tables")
        assert names == ["00000", "00001"]  # the banks' segment, the episodes'
        for name in names:
            tables = tmp_path / "tables" / name
            meta = {t: pq.read_metadata(tables / f"{t}.parquet") for t in BUCKETED}
            count = bucket_count(*segment_loop._staged(meta))
            parts = cut.buckets(name, count, {t: m.num_rows for t, m in meta.items()})
            if parts is None:
                assert not (tmp_path / "buckets" / name).exists()
                continue
            served.append(name)
            assert len(parts) == count > 1
            for table in BUCKETED:
                want = expected(tables, table, count, precut.FINE_BUCKETS)
                for k, part in enumerate(parts):
                    assert part.read(table).equals(want[k]), (name, table, k)
    assert served == (["00000"] if banks else ["00001"])


@pytest.mark.parametrize("fine", [4, precut.FINE_BUCKETS])
def test_a_segment_needing_more_buckets_than_ranges_is_cut_after_the_ingest(
    fine: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found as it is staged (17 buckets, 4 ranges: nothing kept), or only once the export
    counts its buckets (more than the 64 ranges): either way, not served, nothing left."""
    monkeypatch.setattr(buckets, "EPISODES_PER_BUCKET", 20)
    config = sample(tmp_path, synthetic_questions=(), llm_questions=())
    with precut.StagedCut(tmp_path / "buckets", fine=fine) as cut:
        staged_with(cut, config, tmp_path / "tables")
        tables = tmp_path / "tables" / "00001"
        meta = {t: pq.read_metadata(tables / f"{t}.parquet") for t in BUCKETED}
        assert (tmp_path / "buckets" / "00001").exists() == (fine > 17)
        rows = {t: m.num_rows for t, m in meta.items()}
        assert cut.buckets("00001", precut.FINE_BUCKETS + 1, rows) is None
        assert not (tmp_path / "buckets" / "00001").exists()


def test_rows_the_cut_was_not_told_of_leave_the_segment_to_the_cut_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(buckets, "EPISODES_PER_BUCKET", 20)
    config = sample(tmp_path, synthetic_questions=(), llm_questions=())
    with precut.StagedCut(tmp_path / "buckets") as cut:
        (name,) = [n for n in staged_with(cut, config, tmp_path / "tables") if n != "00000"]
        assert (tmp_path / "buckets" / name).exists()  # cut while staged
        meta = {t: pq.read_metadata(tmp_path / "tables" / name / f"{t}.parquet") for t in BUCKETED}
        rows = {t: m.num_rows for t, m in meta.items()} | {"turns": meta["turns"].num_rows + 1}
        assert cut.buckets(name, 3, rows) is None
        assert not (tmp_path / "buckets" / name).exists()  # its scratch files are gone


def test_child_rows_staged_without_their_episodes_are_not_cut(tmp_path: Path) -> None:
    schema = TABLES["turns"]
    row = {"trace_id": "t1", "turn_index": 0, "episode_id": "e1"}
    child = pa.table({f.name: pa.array([row.get(f.name)], f.type) for f in schema}, schema)
    with precut.StagedCut(tmp_path / "buckets") as cut:
        cut.segment("00001")
        cut.add({"turns": child})  # a child row, its episode in no batch
        cut.finish()
        assert cut.buckets("00001", 2, {"turns": 1}) is None
    assert not (tmp_path / "buckets" / "00001").exists()


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_the_files_are_the_same_bytes_whichever_cut_made_the_buckets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(buckets, "EPISODES_PER_BUCKET", 7)  # 22 buckets for 150 episodes
    served: list[str] = []
    taken = precut.StagedCut.buckets

    def buckets_of(self: precut.StagedCut, name: str, *args: object) -> object:
        parts = taken(self, name, *args)  # type: ignore[arg-type]
        served.extend([name] if parts is not None else [])
        return parts

    monkeypatch.setattr(precut.StagedCut, "buckets", buckets_of)

    def run(name: str) -> dict[str, str]:
        return digest(build(sample(tmp_path / name)).out)

    while_staged = run("while-staged")
    assert served  # the episode segments were cut while staged
    served.clear()
    monkeypatch.setattr(precut, "FINE_BUCKETS", 4)  # fewer ranges than buckets: cut after
    after = run("after")
    assert not served
    assert while_staged == after
