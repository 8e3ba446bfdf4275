"""A question bank's fields the schema does not name (the capture side's reference ``code``,
its ``dataset_description``, its own ``source``, ...) are kept in ``questions.extra_fields``,
and a build from that build's tables gives them back: nothing of a bank is dropped."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builder.cli.build_from import restored_build
from builder.config import BuildConfig
from builder.pipeline import build
from builder.restore.folder import DamagedBuild
from builder.restore.inputs import bank_record
from tests.e2e.test_build_from import parquet_digests

BANK = [
    {
        "id": "tmpl_0001",
        "question_text": "What is the mean bmi for each sex?",
        "question_mechanical": "Compute mean(bmi) grouped by sex.",
        "code": "r = df.groupby('sex')['bmi'].mean()\nsubmit(r)",
        "code_hash": "d147305a6a3fa603",
        "dataset_description": "Medical insurance charges",
        "source": "template",
        "validation": None,
        "a.b[0]": {"nested": [1, 2.5, "x"]},
        "template_name": "mean_by_group",
    },
    {"id": None, "question_text": "How many rows have an age over 60 in the table?"},
]


def test_a_bank_s_unknown_fields_are_kept_and_come_back(tmp_path: Path) -> None:
    folder = tmp_path / "insurance"
    folder.mkdir()
    (folder / "questions.json").write_text(json.dumps(BANK, indent=2), encoding="utf-8")
    first = tmp_path / "first"
    build(
        BuildConfig(
            synthetic_questions=(str(folder / "questions.json"),),
            out=first / "ds",
            rejects=first / "r.jsonl",
        )
    )
    rows = pl.read_parquet(first / "ds" / "questions" / "*.parquet").sort("source_line")
    kept = [json.loads(t) if t else None for t in rows.get_column("extra_fields")]
    known = {"id", "question_text", "template_name"}
    assert kept[0] == {
        (f'$["{k}"]' if "." in k else f"$.{k}"): v for k, v in BANK[0].items() if k not in known
    }
    assert kept[1] is None  # nothing unknown: no extras
    again = tmp_path / "again"
    config = BuildConfig(out=again / "ds", rejects=again / "r.jsonl")
    with restored_build(config, str(first / "ds")) as restored:
        build(restored)
    assert parquet_digests(again / "ds") == parquet_digests(first / "ds")


def test_extras_a_bank_record_cannot_hold_are_refused_not_a_traceback(tmp_path: Path) -> None:
    """A nested path, or one naming a field the record has, cannot be written back into a
    bank record: the restore says so (``DamagedBuild`` names the folder); a table edited by
    hand is caught before that by its recorded digest."""
    folder = tmp_path / "bank"
    folder.mkdir()
    (folder / "questions.json").write_text(json.dumps(BANK, indent=2), encoding="utf-8")
    first = tmp_path / "first"
    config = BuildConfig(synthetic_questions=(str(folder / "questions.json"),))
    build(replace(config, out=first / "ds", rejects=first / "r.jsonl"))
    row = (
        pl.read_parquet(first / "ds" / "questions" / "*.parquet")
        .sort("source_line")
        .row(0, named=True)
    )
    assert bank_record(row)["code"] == BANK[0]["code"]
    for path in ("$.a.b", "$[0]", "$.question_text"):
        with pytest.raises(ValueError, match="no field a bank record can have"):
            bank_record({**row, "extra_fields": json.dumps({path: 1})})
    (path,) = (first / "ds" / "questions").glob("*.parquet")
    table = pq.read_table(path)
    column = table.schema.get_field_index("extra_fields")
    hand_edited = pa.array(['{"$.a.b": 1}', None], pa.string())
    pq.write_table(table.set_column(column, table.schema.field(column), hand_edited), path)
    again = BuildConfig(out=tmp_path / "again" / "ds", rejects=tmp_path / "again" / "r.jsonl")
    with (
        pytest.raises(DamagedBuild, match="changed after the build"),
        restored_build(again, str(first / "ds")),
    ):
        pass
