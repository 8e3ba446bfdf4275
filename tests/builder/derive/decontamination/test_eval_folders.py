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


def _chat(question: str) -> list[dict[str, object]]:
    return [
        {"role": "system", "content": "You are a careful data analyst. Answer with pandas code."},
        {"role": "user", "content": f"Dataset: titanic.csv\n{question}"},
        {"role": "assistant", "content": "df.groupby('pclass')['survived'].sum()"},
    ]


def test_a_chat_eval_set_is_read_as_its_user_messages(tmp_path: Path) -> None:
    """An eval set in chat format (a ``messages`` column, as JSON Lines or nested in
    Parquet; content as text or as parts) gives each chat's user text: its JSON would be
    mostly keys, roles, the system prompt and the answer, and match no prompt."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from builder.derive.decontamination import decontaminate
    from builder.derive.decontamination.overlap import PROMPTS

    lines = "".join(json.dumps({"messages": _chat(q)}) + "\n" for q in ITEMS)
    (tmp_path / "chat.jsonl").write_text(lines)
    pq.write_table(pa.table({"messages": [_chat(q) for q in ITEMS]}), tmp_path / "chat.parquet")
    parts = [
        {"messages": [{"role": "user", "content": [{"type": "text", "text": q}]}]} for q in ITEMS
    ]
    (tmp_path / "parts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in parts))
    specs = tuple(f"{tmp_path / n}:messages" for n in ("chat.jsonl", "chat.parquet", "parts.jsonl"))
    loaded = load_evals(specs)
    asked = tuple(f"Dataset: titanic.csv\n{q}" for q in ITEMS)
    assert [e.items for e in loaded] == [asked, asked, tuple(ITEMS)]
    prompts = pl.DataFrame(
        {"kind": ["question"] * 2, "key": ["q1", "q2"], "text": ITEMS}, schema=PROMPTS
    )
    found = decontaminate(prompts, loaded, 8, 0.5)
    assert [e["matched_items"] for e in found.summary["evals"]] == [2, 2, 2]


def test_pandas_default_json_is_read_row_by_row(tmp_path: Path) -> None:
    """``DataFrame.to_json()`` writes each column as an object keyed by row label, and
    ``orient="index"`` each row under its label: both are the rows, not one item."""
    frame = {"question": dict(enumerate(ITEMS)), "answer": {0: "491", 1: "27.08"}}
    columns = {k: {str(i): v for i, v in col.items()} for k, col in frame.items()}
    (tmp_path / "columns.json").write_text(json.dumps(columns))
    index = {str(i): {"question": q, "answer": "x"} for i, q in enumerate(ITEMS)}
    (tmp_path / "index.json").write_text(json.dumps(index))
    loaded = load_evals((str(tmp_path / "columns.json"), str(tmp_path / "index.json")))
    assert [e.items for e in loaded] == [tuple(ITEMS), tuple(ITEMS)]


def test_an_item_that_is_no_text_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps({"question": "fine"}) + "\n" + json.dumps({"question": {"a": 1}}))
    with pytest.raises(EvalSetUnreadable) as raised:
        load_evals((str(path),))
    message = str(raised.value)
    assert f"{path}: item 2 of field 'question' holds a dict" in message and "\n" not in message
