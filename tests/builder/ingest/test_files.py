"""Ingest: every input line is a row, a reject or a blank; bad lines never cost their neighbours."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.config import BuildConfig
from builder.contract.hashing import value_hash
from builder.ingest.files import ingest_files
from builder.ingest.rejects import RejectsWriter
from builder.ingest.staging import read_staged
from builder.sources.inputs import InputError
from schemas import vocabulary
from schemas.stages import Ingested
from schemas.tables import TABLES
from schemas.vocabulary import CHECK_FAILED


def ingest(
    folder: Path, **config: Any
) -> tuple[Ingested, list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Run ingest into ``folder``; returns what it counted, the rejects and staged rows."""
    writer = RejectsWriter(folder / "rejects.jsonl")
    try:
        result = ingest_files(BuildConfig(**config), folder / "staging", writer)
    finally:
        writer.close()
    rejects = [json.loads(line) for line in (folder / "rejects.jsonl").read_text().splitlines()]
    staged = {name: read_staged(folder / "staging", name).to_pylist() for name in TABLES}
    return result, rejects, staged


def write_lines(path: Path, lines: list[bytes], terminator: bytes = b"\n") -> Path:
    data = b"".join(line + terminator for line in lines)
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    elif path.name.endswith(".zst"):
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def corrupt(kind: str, good: bytes) -> bytes:
    """One bad line of the given kind, made from a good one."""
    record = json.loads(good)
    if kind == "truncated":
        return good[: len(good) * 2 // 3]
    if kind == "wrong_type":
        record["verified"] = "yes"
    elif kind == "wrong_int":
        record["question"]["n_steps"] = "3"
    elif kind == "missing":
        del record["teacher_gold_trace"]
    elif kind == "bad_hash":
        record["teacher_gold_trace"]["turns"][1]["execution"]["hooks"][0]["value_hash"] = "XYZ"
    elif kind == "non_utf8":
        return good.replace(b"sales.csv", b"sales\xe9.csv", 1)
    elif kind == "array":
        return json.dumps([record]).encode()
    elif kind == "lowercase_nan":  # Python writes NaN; nan is no dialect's token
        return good.replace(b'"final_answer": 42', b'"final_answer": nan', 1)
    else:
        raise AssertionError(kind)
    return json.dumps(record).encode()


BAD_KINDS = [
    "truncated",
    "wrong_type",
    "wrong_int",
    "missing",
    "bad_hash",
    "non_utf8",
    "array",
    "lowercase_nan",
]
EXPECTED_KIND = {
    "truncated": "invalid_json",
    "lowercase_nan": "invalid_json",
    "non_utf8": "invalid_utf8",
}
BLANKS = {"empty": b"", "spaces": b"   ", "tabs": b"\t \t"}


def raw_of(reject: dict[str, Any]) -> bytes:
    if "raw" in reject:
        return reject["raw"].encode()
    return base64.b64decode(reject["raw_base64"])


def check_accounting(
    result: Ingested,
    rejects: list[dict[str, Any]],
    staged: dict[str, list[dict[str, Any]]],
    expected: dict[str, list[tuple[str, bytes, str | None]]],
) -> None:
    """``expected``: per file, per line: (what, raw line, episode id when valid)."""
    stats = {s.path: s for s in result.inputs}
    for path, lines in expected.items():
        counts = result.input(path)
        assert stats[path].lines == len(lines)
        assert counts.valid + counts.rejected + counts.blank == stats[path].lines
        assert counts.valid == sum(what == "valid" for what, _, _ in lines)
        assert counts.blank == sum(what in BLANKS for what, _, _ in lines)
        assert counts.rejected == sum(
            what not in BLANKS and what != "valid" for what, _, _ in lines
        )
        by_line = {r["line"]: r for r in rejects if r["source_file"] == path}
        for number, (what, raw, _) in enumerate(lines, start=1):
            if what == "valid" or what in BLANKS:
                assert number not in by_line, (path, number)
                continue
            reject = by_line[number]
            assert raw_of(reject) == raw
            assert reject["kind"] == EXPECTED_KIND.get(what, "schema"), (what, reject)
            assert reject["path"].startswith("$") and reject["message"]
    valid_ids = [eid for lines in expected.values() for what, _, eid in lines if what == "valid"]
    assert sorted(r["episode_id"] for r in staged["episodes"]) == sorted(valid_ids)
    assert {r["episode_id"] for r in staged["traces"]} == set(valid_ids)
    assert len(staged["traces"]) == 4 * len(valid_ids)


def test_mixed_file_accounting_and_rejects_contract(make: SimpleNamespace, tmp_path: Path) -> None:
    plan = ["valid", *BAD_KINDS, "empty", "valid", "spaces", "tabs", "valid"]
    lines: list[tuple[str, bytes, str | None]] = []
    for i, what in enumerate(plan):
        eid = f"ep-{i:03d}"
        good = make.line(make.episode(eid))
        raw = (
            good if what == "valid" else BLANKS.get(what) if what in BLANKS else corrupt(what, good)
        )
        lines.append((what, raw, eid if what == "valid" else None))
    path = write_lines(tmp_path / "mixed.jsonl", [raw for _, raw, _ in lines])
    result, rejects, staged = ingest(tmp_path / "out", episodes=(str(path),))
    check_accounting(result, rejects, staged, {str(path): lines})
    paths = {r["line"]: r["path"] for r in rejects}
    assert paths[plan.index("wrong_type") + 1] == "$.verified"
    assert paths[plan.index("wrong_int") + 1] == "$.question.n_steps"
    assert paths[plan.index("missing") + 1] == "$.teacher_gold_trace"
    assert (
        paths[plan.index("bad_hash") + 1]
        == "$.teacher_gold_trace.turns[1].execution.hooks[0].value_hash"
    )
    for reject in rejects:
        assert set(reject) >= {"source_file", "line", "kind", "path", "message"}
        assert reject["source_file"] == str(path)
    assert result.rejected == len(BAD_KINDS)
    assert result.lines == len(plan)
    assert result.records == len(plan) - len(BLANKS)


LINE_KINDS = st.sampled_from(["valid", "valid", "valid", *BAD_KINDS, *BLANKS])


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    files=st.lists(st.lists(LINE_KINDS, max_size=12), min_size=1, max_size=3),
    crlf=st.booleans(),
    suffix=st.sampled_from([".jsonl", ".jsonl.gz", ".jsonl.zst"]),
)
def test_accounting_property(
    make: SimpleNamespace, files: list[list[str]], crlf: bool, suffix: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        expected: dict[str, list[tuple[str, bytes, str | None]]] = {}
        serial = 0
        for f, plan in enumerate(files):
            lines = []
            for what in plan:
                serial += 1
                eid = f"ep-{serial}"
                good = make.line(make.episode(eid))
                raw = (
                    good
                    if what == "valid"
                    else BLANKS[what]
                    if what in BLANKS
                    else corrupt(what, good)
                )
                lines.append((what, raw, eid if what == "valid" else None))
            path = write_lines(
                root / f"f{f}{suffix}", [r for _, r, _ in lines], b"\r\n" if crlf else b"\n"
            )
            expected[str(path)] = lines
        result, rejects, staged = ingest(root / "out", episodes=tuple(expected))
        check_accounting(result, rejects, staged, expected)
        assert len(rejects) == result.rejected


def test_bad_neighbours_do_not_cost_valid_rows_across_batches(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    raws, ids = [], []
    for i in range(25):
        good = make.line(make.episode(f"ep-{i}"))
        if i % 3 == 1:
            raws.append(corrupt("truncated", good))
        else:
            raws.append(good)
            ids.append(f"ep-{i}")
    path = write_lines(tmp_path / "e.jsonl", raws)
    result, rejects, staged = ingest(tmp_path / "out", episodes=(str(path),), batch_lines=4)
    assert [r["episode_id"] for r in staged["episodes"]] == ids
    assert [r["source_line"] for r in staged["episodes"]] == [int(i.split("-")[1]) + 1 for i in ids]
    assert len(rejects) == 25 - len(ids)
    assert result.rows["episodes"] == len(ids)
    assert result.rows["traces"] == 4 * len(ids)


def test_duplicate_episode_id_is_rejected_and_counted(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    first = write_lines(
        tmp_path / "a.jsonl", [make.line(make.episode("same")), make.line(make.episode("other"))]
    )
    second = write_lines(tmp_path / "b.jsonl", [make.line(make.episode("same"))])
    result, rejects, staged = ingest(tmp_path / "out", episodes=(str(first), str(second)))
    (reject,) = rejects
    assert (reject["kind"], reject["source_file"], reject["line"]) == (
        "duplicate_episode_id",
        str(second),
        1,
    )
    assert f"{first}:1" in reject["message"]
    assert sorted(r["episode_id"] for r in staged["episodes"]) == ["other", "same"]
    # counted once, as the reject it is: not also as a failed check of a kept row
    assert vocabulary.DUPLICATE_EPISODE_ID not in result.episode_checks
    assert result.input(str(second)).rejected == 1


def flagged_episode(make: SimpleNamespace, eid: str) -> dict[str, Any]:
    record = make.episode(eid)
    record["triangulation_metadata"]["majority_count"] = 3
    return record


def test_check_failures_are_flagged_not_rejected_by_default(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    path = write_lines(
        tmp_path / "e.jsonl",
        [make.line(make.episode("ok")), make.line(flagged_episode(make, "bad"))],
    )
    result, rejects, staged = ingest(tmp_path / "out", episodes=(str(path),))
    assert rejects == []
    episodes = {r["episode_id"]: r for r in staged["episodes"]}
    assert episodes["bad"]["checks"] == [vocabulary.TRIANGULATION_MISMATCH]
    assert episodes["ok"]["checks"] == []
    assert result.episode_checks == {vocabulary.TRIANGULATION_MISMATCH: 1}
    assert result.input(str(path)).valid == 2


def test_strict_turns_check_failures_into_rejects_and_removes_rows(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    new_q = make.question("Only asked by the flagged episode?", None)
    bad = flagged_episode(make, "bad")
    bad["question"] = new_q
    lines = [make.line(make.episode("ok-1")), make.line(bad), make.line(make.episode("ok-2"))]
    path = write_lines(tmp_path / "e.jsonl", lines)
    result, rejects, staged = ingest(
        tmp_path / "out", episodes=(str(path),), strict=True, batch_lines=1
    )
    (reject,) = rejects
    where = "$.triangulation_metadata"  # where the check failed, and what the traces say
    assert (reject["kind"], reject["line"], reject["path"]) == (CHECK_FAILED, 2, where)
    assert reject["message"].startswith(f"{where}: triangulation_mismatch: majority_answer_hash ")
    assert "majority_count 3," in reject["message"]
    assert "the consistency traces' answer hashes: " in reject["message"]
    assert reject["raw"].encode() == lines[1]
    assert [r["episode_id"] for r in staged["episodes"]] == ["ok-1", "ok-2"]
    for name in ("traces", "turns", "hooks", "messages"):
        assert "bad" not in {r["episode_id"] for r in staged[name]}, name
    assert new_q["id"] not in {r["question_id"] for r in staged["questions"]}
    counts = result.input(str(path))
    assert (counts.valid, counts.rejected, counts.blank) == (2, 1, 0)


def test_strict_rejected_line_does_not_flag_a_later_clean_line(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    """A line rejected under --strict must leave no trace: its question's (wrong) ground truth
    must not be used to check the next episode of the same question."""
    wrong = make.question(ground_truth_hash=value_hash(41))
    lines = [make.line(make.episode("wrong-truth", q=wrong)), make.line(make.episode("clean"))]
    path = write_lines(tmp_path / "e.jsonl", lines)
    _, rejects, staged = ingest(tmp_path / "out", episodes=(str(path),), strict=True)
    assert [(r["line"], r["kind"]) for r in rejects] == [(1, CHECK_FAILED)]
    assert [r["episode_id"] for r in staged["episodes"]] == ["clean"]


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_compressed_inputs_give_the_same_rows(
    make: SimpleNamespace, tmp_path: Path, suffix: str
) -> None:
    lines = [make.line(make.episode(f"ep-{i}")) for i in range(3)] + [b"", b"{broken"]
    plain = write_lines(tmp_path / "e.jsonl", lines)
    packed = write_lines(tmp_path / f"e{suffix}", lines)
    _, rej1, staged1 = ingest(tmp_path / "plain", episodes=(str(plain),))
    r2, rej2, staged2 = ingest(tmp_path / "packed", episodes=(str(packed),))
    for name in TABLES:
        strip = [{k: v for k, v in row.items() if k != "source_file"} for row in staged1[name]]
        assert strip == [
            {k: v for k, v in row.items() if k != "source_file"} for row in staged2[name]
        ], name
    assert [(r["line"], r["kind"], r["raw"]) for r in rej1] == [
        (r["line"], r["kind"], r["raw"]) for r in rej2
    ]
    (stats,) = r2.inputs
    assert stats.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()
    assert stats.lines == 5 and r2.input(str(packed)).blank == 1


def test_truncated_compressed_input_fails_loudly(make: SimpleNamespace, tmp_path: Path) -> None:
    lines = [make.line(make.episode(f"ep-{i}")) for i in range(200)]
    path = write_lines(tmp_path / "e.jsonl.zst", lines)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(InputError, match=str(path)):
        ingest(tmp_path / "out", episodes=(str(path),))


def test_question_banks_are_read_first_and_keep_their_source(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    synthetic = make.question(ground_truth=41, ground_truth_hash=value_hash(41))
    llm = make.question("What is the median price?", None)
    bad_bank_line = json.dumps({"id": "short", "question_text": 3}).encode()
    syn_path = write_lines(tmp_path / "syn.jsonl", [make.line(synthetic), bad_bank_line, b""])
    llm_path = write_lines(tmp_path / "llm.jsonl", [make.line(llm), make.line(synthetic)])
    ep_path = write_lines(tmp_path / "e.jsonl", [make.line(make.episode("ep-1"))])
    result, rejects, staged = ingest(
        tmp_path / "out",
        episodes=(str(ep_path),),
        synthetic_questions=(str(syn_path),),
        llm_questions=(str(llm_path),),
    )
    sources = {r["question_id"]: r["source"] for r in staged["questions"]}
    assert sources == {synthetic["id"]: "synthetic", llm["id"]: "llm"}
    # the gold answer 42 disagrees with the bank's ground truth 41
    assert staged["episodes"][0]["checks"] == [vocabulary.GROUND_TRUTH_MISMATCH]
    assert {i.path: i.kind for i in result.inputs} == {
        str(syn_path): "questions",
        str(llm_path): "questions",
        str(ep_path): "episodes",
    }
    counts = result.input(str(syn_path))
    assert (counts.valid, counts.rejected, counts.blank) == (1, 1, 1)
    assert {(r["source_file"], r["line"], r["kind"]) for r in rejects} == {
        (str(syn_path), 2, "schema")
    }
    # the same question listed in two banks: first source wins, the second is not a reject
    assert result.input(str(llm_path)).valid == 2


def test_too_long_line_is_rejected_with_a_prefix_and_neighbours_kept(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    long_record = make.episode("long")
    long_record["teacher_gold_trace"]["turns"][0]["execution"]["stdout"] = "x" * 50_000
    lines = [make.line(make.episode("a")), make.line(long_record), make.line(make.episode("b"))]
    path = write_lines(tmp_path / "e.jsonl", lines)
    result, rejects, staged = ingest(tmp_path / "out", episodes=(str(path),), max_line_bytes=8192)
    (reject,) = rejects
    assert (reject["line"], reject["kind"], reject["path"]) == (2, "line_too_long", "$")
    assert lines[1].startswith(reject["raw"].encode()) and len(reject["raw"]) <= 256
    assert [r["episode_id"] for r in staged["episodes"]] == ["a", "b"]
    counts = result.input(str(path))
    assert (counts.valid, counts.rejected, counts.blank) == (2, 1, 0)


def test_validate_files_reports_what_ingest_rejects(make: SimpleNamespace, tmp_path: Path) -> None:
    from builder.cli.validate_files import validate_files
    from schemas.episode import Episode

    plan = ["valid", "truncated", "empty", "non_utf8", "valid", "missing"]
    raws = []
    for i, what in enumerate(plan):
        good = make.line(make.episode(f"ep-{i}"))
        raws.append(
            good
            if what == "valid"
            else BLANKS.get(what, b"")
            if what in BLANKS
            else corrupt(what, good)
        )
    path = write_lines(tmp_path / "e.jsonl", raws)
    writer = RejectsWriter(tmp_path / "validate.jsonl")
    counts = validate_files([str(path)], Episode, writer, 1 << 20)[str(path)]
    writer.close()
    assert (counts.valid, counts.rejected, counts.blank) == (2, 3, 1)
    _, ingest_rejects, _ = ingest(tmp_path / "out", episodes=(str(path),))
    validate_rejects = [
        json.loads(x) for x in (tmp_path / "validate.jsonl").read_text().splitlines()
    ]
    assert validate_rejects == ingest_rejects


@pytest.mark.parametrize("answer", [float("nan"), float("inf"), [1.5, float("-inf")]])
def test_python_json_answers_build_and_pass_their_hash_checks(
    make: SimpleNamespace, tmp_path: Path, answer: Any
) -> None:
    # json.dumps writes NaN/Infinity tokens: the capture code's lines look like this.
    record = make.episode("py", gold=make.turns_trace(answer))
    raw = make.line(record)
    assert b"NaN" in raw or b"Infinity" in raw
    path = write_lines(tmp_path / "e.jsonl", [raw])
    _, rejects, staged = ingest(tmp_path / "out", episodes=(str(path),))
    assert rejects == []
    (episode,) = staged["episodes"]
    assert episode["checks"] == []
    gold = next(t for t in staged["traces"] if t["role"] == "gold")
    # the stored text keeps the tokens (a NaN answer is not null) and hashes as captured
    assert gold["final_answer"] == json.dumps(answer, sort_keys=True)
    assert hashlib.sha256(gold["final_answer"].encode()).hexdigest()[:16] == value_hash(answer)
    assert value_hash(answer) != value_hash(None)


def test_a_duplicated_key_is_a_counted_check_with_its_path(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    clean = make.line(make.episode("clean"))
    twice = make.line(make.episode("twice"))
    # the same key twice in a hook and at the top: every JSON parser keeps the last silently
    twice = twice.replace(b'"variable_name": "n"', b'"variable_name": "m", "variable_name": "n"')
    twice = twice.replace(b'"verified": ', b'"verified": false, "verified": ', 1)
    path = write_lines(tmp_path / "e.jsonl", [clean, twice])
    result, rejects, staged = ingest(tmp_path / "out", episodes=(str(path),))
    assert rejects == []  # kept, with its check: nothing is lost
    episodes = {r["episode_id"]: r for r in staged["episodes"]}
    assert vocabulary.DUPLICATE_JSON_KEY in episodes["twice"]["checks"]
    assert episodes["clean"]["checks"] == []
    assert result.duplicate_keys == {
        "$.verified": 1,
        "$.teacher_gold_trace.turns[*].execution.hooks[*].variable_name": 1,
    }
    # no key of the question repeats: its row is not flagged, nor counted among questions'
    assert vocabulary.DUPLICATE_JSON_KEY not in result.question_checks
    assert all(q["checks"] == [] for q in staged["questions"])


def test_a_batch_spans_the_files_of_a_run(
    make: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small files share batches: one ``normalize_batch`` call for a run of six files, with
    every file's lines, blanks, rejects and stats exactly as in batches of one line each."""
    import builder.ingest.files as ingest_module

    good = {i: make.line(make.episode(f"ep-{i}")) for i in range(5)}
    document = json.dumps(make.episode("ep-doc"), indent=2).encode()
    files = {
        "a.jsonl": [good[0], good[1]],
        "b.jsonl": [],  # no bytes at all
        "c.jsonl": [b"", b"  "],
        "d.jsonl": [good[2], corrupt("truncated", good[3]), good[0]],  # ep-0 again
        "e.json": [document],
        "f.jsonl": [good[4]],
    }
    paths = []
    for name, lines in files.items():
        path = tmp_path / "in" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        paths.append(str(path))
    normalize = ingest_module.normalize_batch
    calls: list[int] = []

    def counted(lines: list[Any], *args: Any) -> Any:
        calls.append(len({line.path for line in lines}))
        return normalize(lines, *args)

    monkeypatch.setattr(ingest_module, "normalize_batch", counted)
    shared = ingest(tmp_path / "shared", episodes=tuple(paths))
    assert calls == [4]  # a, d, e and f in one batch; b and c have no record
    calls.clear()
    alone = ingest(tmp_path / "alone", episodes=tuple(paths), batch_lines=1)
    assert calls == [1] * 7  # a record each
    result, rejects, staged = shared
    assert [s.path for s in result.inputs] == paths
    assert result.inputs == alone[0].inputs  # each file's counts too
    assert (rejects, staged) == (alone[1], alone[2])
    assert {(r["source_file"], r["line"], r["kind"]) for r in rejects} == {
        (paths[3], 2, "invalid_json"),
        (paths[3], 3, "duplicate_episode_id"),
    }
    assert [(r["source_file"], r["source_line"]) for r in staged["episodes"]] == [
        (paths[0], 1),
        (paths[0], 2),
        (paths[3], 1),
        (paths[4], 1),
        (paths[5], 1),
    ]
    assert (result.input(paths[1]).blank, result.input(paths[2]).blank) == (0, 2)
