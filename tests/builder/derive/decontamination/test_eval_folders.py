"""What an eval folder's files are read as: JSON Lines under its other names (``.ndjson``,
``.jsonlines``), Parquet as ``.pq``, Arrow as Feather; a data file of a kind not read is
refused in one line naming it and the kinds that are, never passed over."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from pyarrow import feather

from builder.derive.decontamination import load_evals
from builder.derive.decontamination.evals import EvalSetUnreadable

ITEMS = [
    "how many passengers in third class survived the sinking of the ship",
    "what is the average fare paid by passengers who embarked at southampton",
]


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "evalset"
    folder.mkdir()
    pl.DataFrame({"question": ["an unrelated question about sorting a list"]}).write_parquet(
        folder / "test.parquet"
    )
    (folder / "README.md").write_text("an eval set")
    return folder


@pytest.mark.parametrize("name", ["validation.ndjson", "validation.jsonlines", "v.NDJSON"])
def test_json_lines_under_its_other_names_are_read(tmp_path: Path, name: str) -> None:
    folder = _folder(tmp_path)
    (folder / name).write_text("".join(json.dumps({"question": q}) + "\n" for q in ITEMS))
    (loaded,) = load_evals((str(folder),))
    assert set(ITEMS) <= set(loaded.items) and len(loaded.items) == 3
    (alone,) = load_evals((str(folder / name),))  # named on its own, too
    assert alone.items == tuple(ITEMS)


def test_parquet_as_pq_and_feather_files_are_read(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    pl.DataFrame({"question": ITEMS[:1]}).write_parquet(folder / "a.pq")
    feather.write_feather(pl.DataFrame({"question": ITEMS[1:]}).to_arrow(), folder / "b.feather")
    (loaded,) = load_evals((str(folder),))
    assert set(ITEMS) <= set(loaded.items) and len(loaded.items) == 3


@pytest.mark.parametrize(
    "name", ["dev.orc", "dev.avro", "dev.csv.gz", "dev.xls", "dev.pkl", "dev.sqlite", "dev.lance"]
)
def test_a_data_file_of_a_kind_not_read_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    folder = _folder(tmp_path)
    (folder / name).write_bytes(b"\x00\x01data")
    with pytest.raises(EvalSetUnreadable) as raised:
        load_evals((str(folder),))
    message = str(raised.value)
    assert message.startswith(f"{folder / name}: not a kind of file an eval set is read from")
    for kind in ("JSONL", ".ndjson", "CSV", "Parquet", ".pq", ".feather"):
        assert kind in message
    assert "\n" not in message
