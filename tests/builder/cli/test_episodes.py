"""The `episodes` command as a user runs it, in a subprocess from another directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from builder.contract.hashing import value_hash

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data/episodes/episodes.jsonl"
BAD = ROOT / "data/bad/bad_lines.jsonl"


def episodes(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_build_from_any_directory_with_flags_only(tmp_path: Path) -> None:
    result = episodes(
        "build",
        "--episodes",
        str(SAMPLE),
        "--out",
        "out/ds",
        "--rejects",
        "out/r.jsonl",
        "--no-progress",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "rows per config" in result.stdout
    manifest = json.loads((tmp_path / "out/ds/manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == [str(SAMPLE)]
    assert (tmp_path / "out/r.jsonl").read_text() == ""


def test_build_refusal_exits_1_and_names_the_rejects(tmp_path: Path) -> None:
    result = episodes(
        "build", "--episodes", str(BAD), "--out", "ds", "--rejects", "r.jsonl", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "refused" in result.stderr and "r.jsonl" in result.stderr
    assert not (tmp_path / "ds").exists()


def test_validate_reports_every_reject_with_file_and_line(tmp_path: Path) -> None:
    result = episodes("validate", str(BAD), "--rejects", "r.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    rejects = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert rejects
    for r in rejects:
        assert f"{BAD}:{r['line']}: {r['kind']}" in result.stderr
    clean = episodes("validate", str(SAMPLE), cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr


def test_missing_input_is_a_usage_error(tmp_path: Path) -> None:
    result = episodes("build", "--episodes", "nope/*.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert "nope/*.jsonl: no input file matches" in result.stderr


def test_schema_command_prints_the_committed_json_schema(tmp_path: Path) -> None:
    result = episodes("schema", cwd=tmp_path)
    assert result.returncode == 0
    committed = (ROOT / "schemas/episode.schema.json").read_text()
    assert result.stdout == committed


def test_sessions_init_creates_tables_that_a_build_reads(tmp_path: Path) -> None:
    import sqlite3

    result = episodes("sessions", "init", "sqlite:///s.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(tmp_path / "s.db") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "actions"} <= tables
    again = episodes("sessions", "init", "sqlite:///s.db", cwd=tmp_path)
    assert again.returncode == 0, "init is idempotent"
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("INSERT INTO sessions VALUES (1, 'Sum the column a.', '', '', TRUE)")
        db.execute("INSERT INTO actions VALUES ('u1', 1, 1, 'set_code', 'df.a.sum()', NULL, 'ai')")
    built = episodes(
        "build",
        "--episodes",
        str(SAMPLE),
        "--sessions",
        "sqlite:///s.db",
        "--out",
        "ds",
        "--rejects",
        "r.jsonl",
        cwd=tmp_path,
    )
    assert built.returncode == 0, built.stderr
    manifest = json.loads((tmp_path / "ds/manifest.json").read_text())
    assert manifest["sessions"]["sessions"] == 1 and manifest["sessions"]["sft_rows"] == 1


def test_a_list_flag_given_twice_adds_and_a_single_one_is_refused(tmp_path: Path) -> None:
    """``--episodes a --episodes b`` reads both (the second used to replace the first,
    silently); ``--sessions`` takes one database, so a second is an error, not a drop."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_text("".join(lines[:10]), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(lines[10:20]), encoding="utf-8")
    both = ("--episodes", "a.jsonl", "--episodes", "b.jsonl", "--no-progress")
    result = episodes("build", *both, "--out", "ds", "--rejects", "r.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "ds/manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == ["a.jsonl", "b.jsonl"]
    twice = ("--sessions", "sqlite:///a.db", "--sessions", "sqlite:///b.db")
    refused = episodes("build", *both, *twice, "--out", "ds2", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "episodes build: --sessions given twice: a build reads one — see `episodes build --help`"
    )
    assert not (tmp_path / "ds2").exists()


def test_validate_strict_rejects_what_a_strict_build_would(tmp_path: Path) -> None:
    """A producer's check before handing data over: ``validate --strict`` rejects the line
    whose integrity checks fail, naming the field, as ``build --strict`` does."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["question"]["id"] = "f" * 16
    (tmp_path / "e.jsonl").write_text(json.dumps(record) + "\n" + lines[1] + "\n")
    plain = episodes("validate", "e.jsonl", cwd=tmp_path)
    assert plain.returncode == 0 and "2 valid, 0 rejected" in plain.stdout
    strict = episodes("validate", "--strict", "e.jsonl", "--rejects", "r.jsonl", cwd=tmp_path)
    assert strict.returncode == 2 and "1 valid, 1 rejected" in strict.stdout
    (reject,) = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert (reject["kind"], reject["line"], reject["path"]) == ("check_failed", 1, "$.question.id")
    built = episodes(
        "build", "--strict", "--episodes", "e.jsonl", "--out", "ds", "--rejects", "b.jsonl",
        "--max-reject-ratio", "1", "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert json.loads((tmp_path / "b.jsonl").read_text()) == reject


def test_strict_rejects_a_bank_question_whose_ground_truth_hash_is_wrong(tmp_path: Path) -> None:
    """A bank's question whose ``ground_truth_hash`` is not its ground truth's is flagged
    (``ground_truth_mismatch``) by a build; under ``--strict`` it is a ``check_failed``
    reject naming the field, in ``validate`` and ``build`` alike, and not a question row."""
    good = {"question_text": "What is 2+2?", "hint": "add", "ground_truth": 4}
    bad = {"question_text": "What is 3+3?", "hint": "add", "ground_truth": 6}
    good["ground_truth_hash"] = value_hash(4)
    bad["ground_truth_hash"] = "0" * 16
    (tmp_path / "q.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    plain = episodes("validate", "--questions", "q.jsonl", cwd=tmp_path)
    assert plain.returncode == 0 and "2 valid, 0 rejected" in plain.stdout
    strict = episodes(
        "validate", "--questions", "--strict", "q.jsonl", "--rejects", "r.jsonl", cwd=tmp_path
    )
    assert strict.returncode == 2 and "1 valid, 1 rejected" in strict.stdout
    (reject,) = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert (reject["kind"], reject["line"], reject["path"]) == (
        "check_failed",
        2,
        "$.ground_truth_hash",
    )
    assert f"ground_truth_mismatch: {'0' * 16} is not the hash of ground_truth" in reject["message"]
    built = episodes(
        "build", "--strict", "--synthetic-questions", "q.jsonl", "--out", "ds",
        "--rejects", "b.jsonl", "--max-reject-ratio", "1", "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert json.loads((tmp_path / "b.jsonl").read_text()) == reject
    (questions,) = (tmp_path / "ds" / "questions").glob("*.parquet")
    texts = pq.read_table(questions).column("question_text").to_pylist()
    assert texts == ["What is 2+2?"]


def test_a_refused_first_build_does_not_speak_of_a_previous_one(tmp_path: Path) -> None:
    """A refusal into a folder that holds no build says nothing was written there; "the
    previous build … was left intact" is said only when there is one."""
    (tmp_path / "bad.jsonl").write_bytes(BAD.read_bytes())
    args = ("build", "--episodes", "bad.jsonl", "--out", "ds", "--rejects", "r.jsonl")
    refused = episodes(*args, "--no-progress", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("— nothing was written to ds"), refused.stderr
    assert not (tmp_path / "ds").exists()


def test_a_build_of_inputs_without_records_warns_that_the_dataset_is_empty(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    args = ("build", "--episodes", "empty.jsonl", "--out", "ds", "--rejects", "r.jsonl")
    built = episodes(*args, "--no-progress", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "warning: the inputs hold no records, so the dataset has no rows" in built.stdout
    (tmp_path / "one.jsonl").write_text(SAMPLE.read_text().splitlines()[0] + "\n")
    args = ("build", "--episodes", "one.jsonl", "--out", "ds2", "--rejects", "r2.jsonl")
    one = episodes(*args, "--no-progress", cwd=tmp_path)
    assert one.returncode == 0 and "hold no records" not in one.stdout


def test_the_command_reaches_the_ingest_workers_without_importing_arrow(tmp_path: Path) -> None:
    """The arguments are parsed, and the sample's config (sessions included) loaded and
    checked, before the ingest's workers start (``start_ingest_workers``), which import
    the ingest on the other core meanwhile; none of that imports Arrow, Polars or the Hub
    client, so the workers' server starts a fraction of a second into the command, and a
    usage error is said as soon."""
    script = """
import sys
from builder.cli.episodes import _build_parser
from builder.cli.options import load_build_config
args = _build_parser().parse_args(["build", "--config", sys.argv[1], "--no-progress"])
config = load_build_config(args)
assert config.sessions and config.episodes, config
heavy = ("pyarrow", "polars", "huggingface_hub", "datasets", "numpy")
print(sorted(name for name in heavy if name in sys.modules))
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "dataset.toml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
