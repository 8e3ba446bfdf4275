"""Question banks as the capture side writes them: one JSON document (``questions.json``)
with its own key names and producer ids, as well as JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builder.cli.validate_files import validate_files
from builder.config import BuildConfig
from builder.contract.hashing import question_id, value_hash
from builder.ingest.rejects import RejectsWriter
from builder.pipeline import BuildFailed, build
from builder.sources.banks import bank_lines
from builder.sources.inputs import InputFile
from builder.validate.reject import Reject
from builder.validate.validator import Validator
from schemas.episode import Question

DATA = Path(__file__).resolve().parents[3] / "data"


def capture_question(i: int, **extra: object) -> dict:
    """A question as the capture side's synthetic generator writes it into its bank."""
    answer = {"column": "charges", "mean": 13270.42 + i}
    return {
        "question": f"What is the mean of the charges column, case {i}?",
        "hint": "Take the mean of charges.",
        "n_steps": 2,
        "difficulty": "EASY",
        "template_name": "column_mean",
        "template_params": None,
        "output_type": "dict",
        "output_schema": "A JSON object with keys column and mean",
        "_ground_truth": answer,
        "ground_truth_hash": value_hash(answer),
        **extra,
    }


def lines_of(path: Path) -> list:
    return bank_lines(InputFile(str(path), 1 << 20).lines())


def test_a_document_bank_is_one_source_line_per_question(tmp_path: Path) -> None:
    questions = [capture_question(i) for i in range(3)]
    pretty = tmp_path / "questions.json"
    pretty.write_text(
        json.dumps({"dataset_columns": ["charges"], "questions": questions}, indent=2)
    )
    lines = lines_of(pretty)
    assert [json.loads(line.raw) for line in lines] == questions
    text = pretty.read_text().splitlines()
    for line in lines:  # numbered by the line each question starts on
        assert text[line.number - 1].strip() == "{"
        assert text[line.number].strip().startswith('"question":')
    compact = tmp_path / "list.json"
    compact.write_text(json.dumps(questions))
    assert [(x.number, json.loads(x.raw)) for x in lines_of(compact)] == [(1, q) for q in questions]


def test_a_jsonl_bank_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "bank.jsonl"
    path.write_text("".join(json.dumps(capture_question(i)) + "\n" for i in range(3)))
    assert [line.number for line in lines_of(path)] == [1, 2, 3]
    one = tmp_path / "one.json"  # one question on one line is JSONL, not a document
    one.write_text(json.dumps(capture_question(0)) + "\n")
    assert [json.loads(line.raw) for line in lines_of(one)] == [capture_question(0)]
    single = tmp_path / "single.json"  # one question, pretty-printed
    single.write_text("\n" + json.dumps(capture_question(0), indent=2) + "\n")
    assert [(x.number, json.loads(x.raw)) for x in lines_of(single)] == [(2, capture_question(0))]
    committed = next((DATA / "questions" / "llm").glob("*.jsonl"))
    assert len(lines_of(committed)) == len(committed.read_text().splitlines())


def test_a_capture_side_bank_builds_with_its_ground_truth_checked(tmp_path: Path) -> None:
    questions = [capture_question(0), capture_question(1, id="llm_insurance_0002")]
    broken = capture_question(2, n_steps="three")
    bank = tmp_path / "questions.json"
    bank.write_text(json.dumps({"questions": [*questions, broken]}, indent=2))
    out, rejects = tmp_path / "ds", tmp_path / "rejects.jsonl"
    config = BuildConfig(
        episodes=(str(DATA / "episodes" / "*.jsonl"),),
        synthetic_questions=(str(bank),),
        out=out,
        rejects=rejects,
        max_reject_ratio=0.5,
    )
    build(config)
    rows = {
        r["question_id"]: r
        for r in pq.read_table(out / "questions").to_pylist()
        if r["source_file"] == str(bank)
    }
    for q, capture_id in zip(questions, (None, "llm_insurance_0002"), strict=True):
        row = rows[question_id(q["question"], q["hint"])]
        assert row["question_text"] == q["question"]
        assert json.loads(row["ground_truth"]) == q["_ground_truth"]
        assert (row["capture_id"], row["checks"], row["template_name"]) == (
            capture_id,
            [],
            "column_mean",
        )
    assert len(rows) == 2
    [reject] = [json.loads(r) for r in rejects.open() if str(bank) in r]
    lines = bank.read_text().splitlines()
    third = [i for i, text in enumerate(lines, 1) if text == "    {"][2]  # where it starts
    assert (reject["line"], reject["path"]) == (third, "$.n_steps")


def test_a_bank_reject_names_the_bank_lines_own_keys(tmp_path: Path) -> None:
    bank = tmp_path / "questions.json"
    bank.write_text(json.dumps([capture_question(0, question=7)], indent=2))
    [line] = lines_of(bank)
    outcome = Validator(Question, "id").validate(line)
    assert isinstance(outcome, Reject)
    errors = {e.path: e.message for e in outcome.errors}
    # the id is computed from the text: only the text is named, by the bank's own key
    assert set(errors) == {"$.question"}


def test_a_question_asked_only_mechanically_takes_that_text(tmp_path: Path) -> None:
    """The capture side's later records may hold only a template's wording; its episodes
    then carry that wording as the question's text, so the bank's id must be its address."""
    record = {
        "id": "prog_insurance_0003",
        "source": "procedural",
        "dataset": "insurance",
        "question_text": None,
        "question_mechanical": "Compute the mean of charges grouped by region.",
        "hint": None,
    }
    bank = tmp_path / "questions.json"
    worded_one = {**record, "question_text": "Which region pays most?"}
    invisible = {  # blank as the schema means it
        **record,
        "question_text": " \u200b",
        "question_mechanical": "Compute the median of charges grouped by region.",
    }
    bank.write_text(json.dumps([record, worded_one, invisible]))
    validator = Validator(Question, "id")
    mechanical, worded, unseen = (validator.validate(line) for line in lines_of(bank))
    assert not isinstance(mechanical, Reject) and not isinstance(worded, Reject)
    assert not isinstance(unseen, Reject)
    assert mechanical.record.question_text == record["question_mechanical"]
    assert unseen.record.question_text == invisible["question_mechanical"]
    assert mechanical.record.id == question_id(record["question_mechanical"], None)
    assert mechanical.record.capture_id == "prog_insurance_0003"
    assert worded.record.question_text == "Which region pays most?"


def test_a_question_given_again_in_another_bank_with_other_content_is_rejected(
    tmp_path: Path,
) -> None:
    """Two banks holding one question id with two ground truths: the second is a
    duplicate_id reject naming the first, in ``build`` as in ``validate`` (it was dropped
    without a word, and ``--strict`` let a wrong hash through that way). The same question
    again is no reject: the first is kept."""
    first, again = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(capture_question(0)) + "\n")
    other = {**capture_question(0), "_ground_truth": 1, "ground_truth_hash": "0" * 16}
    again.write_text(json.dumps(other) + "\n" + json.dumps(capture_question(1)) + "\n")
    (tmp_path / "c.jsonl").write_text(json.dumps(capture_question(1)) + "\n")
    out, rejects = tmp_path / "ds", tmp_path / "rejects.jsonl"
    config = BuildConfig(
        synthetic_questions=(str(first),),
        llm_questions=(str(again), str(tmp_path / "c.jsonl")),
        out=out,
        rejects=rejects,
        max_reject_ratio=1.0,
    )
    manifest = build(config).manifest
    (reject,) = [json.loads(r) for r in rejects.open()]
    assert (reject["source_file"], reject["line"], reject["kind"], reject["path"]) == (
        str(again),
        1,
        "duplicate_id",
        "$.id",
    )
    assert f"already seen at {first}:1, with other content" in reject["message"]
    counts = {i["path"]: (i["valid"], i["rejected"]) for i in manifest["inputs"]}
    assert counts == {str(first): (1, 0), str(again): (1, 1), str(tmp_path / "c.jsonl"): (1, 0)}
    validated = RejectsWriter(None)
    files = [str(first), str(again), str(tmp_path / "c.jsonl")]
    validate_files(files, Question, validated, 1 << 20)
    assert dict(validated.by_kind) == {"duplicate_id": 1}


def test_a_wording_asked_twice_does_not_refuse_the_build(tmp_path: Path) -> None:
    """The capture project's template banks word two parameter sets of a template alike
    (z = 3.0 and 2.5, both "how many numeric columns contain an outlier?"): the second is a
    duplicate_id reject, kept in the rejects, and not counted toward ``max_reject_ratio``
    (1 %), which a bank of 50 with two such repeats exceeded. A broken record still counts."""
    records = [capture_question(i) for i in range(48)]
    records += [{**capture_question(i), "id": f"syn_{i}_b", "_ground_truth": i} for i in (3, 7)]
    bank = tmp_path / "questions.json"
    bank.write_text(json.dumps({"questions": records}))
    out, rejects = tmp_path / "ds", tmp_path / "rejects.jsonl"
    report = build(BuildConfig(synthetic_questions=(str(bank),), out=out, rejects=rejects))
    kinds = [json.loads(r)["kind"] for r in rejects.open()]
    assert kinds == ["duplicate_id", "duplicate_id"]
    assert report.manifest["rejects"]["total"] == 2
    assert pq.read_table(out / "questions").num_rows == 48
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in records[:48]) + "{not json\n")
    config = BuildConfig(synthetic_questions=(str(broken),), out=tmp_path / "b", rejects=rejects)
    with pytest.raises(BuildFailed, match="1 of 49 records rejected"):
        build(config)
