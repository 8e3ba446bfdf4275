"""Episode layouts: the capture project's later layout builds to the same training rows as the
same episodes in the seeds' layout; a line of neither layout names the nearest one."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import orjson
import pyarrow.parquet as pq
import pytest

from builder.cli.summary import tolerance_hint
from builder.config import BuildConfig
from builder.contract.hashing import question_id, value_hash
from builder.derive import OBJECTIVE_MODULES
from builder.pipeline import build
from builder.sources.inputs import SourceLine
from builder.validate.reject import Reject
from builder.validate.validator import Valid, Validator
from samples.episodes import generate_episodes
from samples.variants import to_capture_v2, without_v2_fields
from schemas.episode import Episode
from schemas.json_schema import episode_json_schema
from schemas.layouts import CAPTURE_V2, LAYOUTS
from schemas.vocabulary import SCHEMA

DATA = Path(__file__).resolve().parents[3] / "data"


def build_file(tmp: Path, name: str, records: list[dict]) -> Path:
    source = tmp / f"{name}.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    out = tmp / name
    build(BuildConfig(episodes=(str(source),), out=out, rejects=tmp / f"{name}-rejects.jsonl"))
    return out


def test_the_later_layout_builds_the_same_training_rows(tmp_path: Path) -> None:
    episodes = list(generate_episodes(40, 3))
    seeds = build_file(tmp_path, "seeds", [without_v2_fields(e) for e in episodes])
    later = build_file(tmp_path, "later", [to_capture_v2(e) for e in episodes])
    for config in OBJECTIVE_MODULES:
        a, b = pq.read_table(seeds / config), pq.read_table(later / config)
        assert a.num_rows > 0 or config == "self_correction", config
        if config == "rl":  # the later layout names the data file; these seeds lines do not
            sources = {r["episode_id"]: r["csv_source"] for r in map(to_capture_v2, episodes)}
            rows = b.select(["episode_id", "csv_source"]).to_pylist()
            named = {r["episode_id"]: r["csv_source"] for r in rows}
            assert named == {e: sources[e] for e in named} and any(named.values())
            assert a.column("csv_source").null_count == a.num_rows
            a, b = a.drop_columns("csv_source"), b.drop_columns("csv_source")
        assert a.equals(b), config
    manifest = json.loads((later / "manifest.json").read_text())
    assert manifest["layouts"] == {CAPTURE_V2.name: 40}
    assert manifest["rejects"]["total"] == 0 and manifest["checks"]["episodes_by_kind"] == {}
    assert manifest["extra_fields"]["$.timing"] == 40  # kept, not lost
    layouts = pq.read_table(later / "episodes", columns=["layout"]).column("layout")
    assert set(layouts.to_pylist()) == {CAPTURE_V2.name}
    for column in ("total_turns", "archived_turn_count"):  # the later layout has neither
        captured = pq.read_table(seeds / "traces", columns=[column]).column(0)
        absent = pq.read_table(later / "traces", columns=[column]).column(0)
        assert captured.null_count == 0 and absent.null_count == len(absent) > 0, column


def test_unknown_fields_are_named_as_the_later_layout_spells_them(tmp_path: Path) -> None:
    record = to_capture_v2(next(generate_episodes(1, 9)))
    record["gold_trace"]["sampler"] = "nucleus"
    record["triangulation"]["judge"] = "vote"
    out = build_file(tmp_path, "later", [record])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["extra_fields"]["$.gold_trace.sampler"] == 1
    assert manifest["extra_fields"]["$.triangulation.judge"] == 1
    assert not any("teacher_gold_trace" in p for p in manifest["extra_fields"])
    (extra,) = pq.read_table(out / "episodes", columns=["extra_fields"]).column(0).to_pylist()
    assert json.loads(extra)["$.gold_trace.sampler"] == "nucleus"


def validate(record: dict) -> Valid | Reject:
    return Validator(Episode).validate(SourceLine("e.jsonl", 7, orjson.dumps(record)))


def test_a_line_of_no_layout_names_the_nearest_and_what_it_lacks() -> None:
    record = to_capture_v2(next(generate_episodes(1, 5)))
    del record["gold_trace"]
    outcome = validate(record)
    assert isinstance(outcome, Reject) and outcome.kind == SCHEMA
    (error,) = outcome.errors
    assert error.path == "$.gold_trace"
    assert "nearest, 'capture_v2', lacks gold_trace" in error.message
    del record["question"]
    (error,) = validate(record).errors
    assert error.path == "$" and "lacks question, gold_trace" in error.message
    assert "chat-format" not in error.message


def test_a_chat_format_row_passed_as_an_episode_is_named_as_one() -> None:
    """The capture side also writes chat-format training files beside its episodes."""
    row = {"messages": [{"role": "system", "content": "You are a data analyst."}]}
    (error,) = validate(row).errors
    assert error.path == "$" and "looks like a chat-format training row" in error.message


def test_rejects_of_the_later_layout_use_its_own_names() -> None:
    record = to_capture_v2(next(generate_episodes(1, 5)))
    record["gold_trace"]["success"] = "yes"
    outcome = validate(record)
    assert isinstance(outcome, Reject)
    assert [e.path for e in outcome.errors] == ["$.gold_trace.success"]


@pytest.mark.parametrize("question_id", ["llm_gen_ins_0001", None])
@pytest.mark.parametrize("text", [None, 7])
def test_a_question_without_a_text_is_named_at_its_text_not_its_id(
    question_id: str | None, text: object
) -> None:
    """The capture code writes ``question_text or question_mechanical``, null when both are:
    the id is computed from the text, so the reject names the text alone."""
    record = to_capture_v2(next(generate_episodes(1, 5)))
    record["question"] |= {"id": question_id, "question_text": text}
    outcome = validate(record)
    assert isinstance(outcome, Reject)
    assert [e.path for e in outcome.errors] == ["$.question.question_text"]


def test_a_later_line_using_a_seeds_name_of_its_own_field_is_refused_at_that_key() -> None:
    """In a capture_v2 line the seeds' ``execution_success`` (for ``success``) or
    ``triangulation_metadata`` (for ``triangulation``) would be taken for the field, or
    overwrite it: which one the line means is the producer's to say."""
    record = to_capture_v2(next(generate_episodes(1, 5)))  # three consistency traces or more
    assert isinstance(validate(record), Valid)
    named = json.loads(json.dumps(record))
    named["gold_trace"]["execution_success"] = named["gold_trace"].pop("success")
    both = json.loads(json.dumps(record))
    both["consistency_traces"][1]["execution_success"] = False
    both["triangulation_metadata"] = {**both["triangulation"], "n_consistency_runs": 5}
    for line, paths in (
        (named, ["$.gold_trace.execution_success"]),
        (both, ["$.triangulation_metadata", "$.consistency_traces[1].execution_success"]),
    ):
        outcome = validate(line)
        assert isinstance(outcome, Reject) and outcome.kind == SCHEMA
        assert [e.path for e in outcome.errors] == paths
        assert "capture_v2 line" in outcome.errors[0].message
        assert not jsonschema.Draft202012Validator(episode_json_schema()).is_valid(line)


def test_the_sample_has_both_layouts_and_the_json_schema_accepts_both() -> None:
    validator = jsonschema.Draft202012Validator(episode_json_schema())
    seen = set()
    for path in sorted((DATA / "episodes").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            validator.validate(record)
            outcome = validate(record)
            assert isinstance(outcome, Valid)
            seen.add(outcome.layout)
    assert seen == {layout.name for layout in LAYOUTS}


def producer_line(seed: int, **question: object) -> dict:
    """A capture_v2 line as its producer writes it: its own question id, the question
    metadata of the later layout."""
    record = to_capture_v2(next(generate_episodes(1, seed)))
    metadata = {
        "id": "llm_housing_0001",
        "category": "aggregation",
        "tags": ["count", "filter"],
        "template_name": "count_over_threshold",
        "template_params": {"column": "total_bedrooms", "threshold": 2691},
        "output_type": "int",
        "output_schema": "An integer",
    }
    record["question"].update({**metadata, **question})
    return record


def table(out: Path, name: str) -> list[dict]:
    return pq.read_table(out / name).to_pylist()


def test_a_producer_question_id_is_kept_and_the_content_address_joins(tmp_path: Path) -> None:
    record = producer_line(11)
    jsonschema.Draft202012Validator(episode_json_schema()).validate(record)
    nameless = producer_line(12, id=None)
    out = build_file(tmp_path, "ids", [record, nameless])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rejects"]["total"] == 0
    assert (
        not manifest["extra_fields"] or "$.question.template_name" not in manifest["extra_fields"]
    )
    questions = {q["capture_id"]: q for q in table(out, "questions")}
    assert set(questions) == {"llm_housing_0001", None}
    first = questions["llm_housing_0001"]
    q = record["question"]
    assert first["question_id"] == question_id(q["question_text"], q["hint"])
    assert (first["category"], first["tags"], first["output_type"]) == (
        "aggregation",
        ["count", "filter"],
        "int",
    )
    assert json.loads(first["template_params"]) == q["template_params"]
    assert json.loads(first["output_schema"]) == "An integer"
    episodes = {e["question_id"] for e in table(out, "episodes")}
    assert episodes == {q["question_id"] for q in questions.values()}
    assert all(not e["checks"] for e in table(out, "episodes"))


def test_a_seeds_line_without_a_question_id_gets_the_content_address(tmp_path: Path) -> None:
    """The seeds' capture code wrote ``"id": null`` where it had not computed the id: the
    content address is the id the seeds define, so such a line builds like any other, and
    the JSON Schema says so. A malformed id stays a reject in the seeds' layout."""
    null_id, no_id, bad_id = (next(generate_episodes(1, seed)) for seed in (21, 22, 23))
    null_id["question"]["id"] = None
    del no_id["question"]["id"]
    bad_id["question"]["id"] = "q001"
    schema = jsonschema.Draft202012Validator(episode_json_schema())
    assert schema.is_valid(null_id) and schema.is_valid(no_id) and not schema.is_valid(bad_id)
    rejected = validate(bad_id)
    assert isinstance(rejected, Reject)
    assert [e.path for e in rejected.errors] == ["$.question.id"]
    out = build_file(tmp_path, "seeds-ids", [null_id, no_id])
    assert json.loads((out / "manifest.json").read_text())["rejects"]["total"] == 0
    expected = {
        question_id(r["question"]["question_text"], r["question"]["hint"]) for r in (null_id, no_id)
    }
    questions = table(out, "questions")
    assert {q["question_id"] for q in questions} == expected
    assert [q["capture_id"] for q in questions] == [None, None]
    assert all(not e["checks"] for e in table(out, "episodes"))
    assert {e["layout"] for e in table(out, "episodes")} == {"seeds"}


def ground_truth_verified(seed: int, accepted: list[str]) -> dict:
    """A capture_v2 episode the producer verified against ground truth: no consistency
    traces, the gold answer as the majority answer, a count of 0."""
    record = producer_line(seed)
    gold = record["gold_trace"]["final_answer_hash"]
    record["consistency_traces"] = []
    record["question"].pop("ground_truth", None)
    record["question"].update(ground_truth_hash=accepted[0], ground_truth_hashes=accepted)
    record["triangulation"] = {
        "n_consistency_runs": 0,
        "n_consistency_succeeded": 0,
        "majority_answer_hash": gold,
        "majority_count": 0,
        "gold_matches_majority": True,
    }
    record["verified"] = True
    return record


def test_ground_truth_evidence_verifies_an_episode_without_consistency_traces(
    tmp_path: Path,
) -> None:
    matched = ground_truth_verified(21, ["0" * 16])
    gold = matched["gold_trace"]["final_answer_hash"]
    matched["question"]["ground_truth_hashes"] = ["0" * 16, gold]  # its second valid answer
    tolerance = ground_truth_verified(22, ["1" * 16])  # matched within a float tolerance
    out = build_file(tmp_path, "gt", [matched, tolerance])
    episodes = {e["episode_id"]: e for e in table(out, "episodes")}
    ok, loose = episodes[matched["episode_id"]], episodes[tolerance["episode_id"]]
    assert ok["verified_recomputed"] and ok["checks"] == []
    # A match within a float tolerance is not an exact hash match: flagged, never trained.
    assert not loose["verified_recomputed"]
    assert loose["checks"] == ["ground_truth_mismatch", "verified_mismatch"]
    rl = table(out, "rl")
    assert [r["episode_id"] for r in rl] == [matched["episode_id"]]
    assert rl[0]["expected_final_answer_hash"] == gold


def test_the_seeds_layout_still_needs_a_consistency_match(tmp_path: Path) -> None:
    episode = without_v2_fields(next(generate_episodes(1, 23)))
    gold = episode["teacher_gold_trace"]["final_answer_hash"]
    episode["question"]["ground_truth_hashes"] = [gold]
    episode["consistency_traces"] = []
    episode["verified"] = True
    out = build_file(tmp_path, "seeds", [episode])
    (row,) = table(out, "episodes")
    assert not row["verified_recomputed"] and "verified_mismatch" in row["checks"]


def test_every_answer_the_question_accepts_is_correct(tmp_path: Path) -> None:
    """A question with several valid answers: a consistency trace that gave another accepted
    answer is correct (orm label true, never a dpo rejected), and rl rows carry every
    accepted hash for the outcome reward."""
    for seed in range(30, 90):
        record = producer_line(seed)
        gold = record["gold_trace"]["final_answer_hash"]
        others = [
            t["final_answer_hash"]
            for t in record["consistency_traces"]
            if t["final_answer_hash"] not in (None, gold)
        ]
        if record["verified"] and others:
            break
    else:
        pytest.fail("no verified episode with a differing consistency answer")
    other = others[0]
    record["question"].update(ground_truth_hashes=[other, gold])
    out = build_file(tmp_path, "multi", [record])
    (rl,) = table(out, "rl")
    assert rl["accepted_answer_hashes"] == [gold, other]
    labels = {r["trace_id"]: r["label"] for r in table(out, "orm")}
    traces = {t["trace_id"]: t["final_answer_hash"] for t in table(out, "traces")}
    assert all(labels[t] for t, h in traces.items() if h == other)
    pairs = table(out, "dpo") if (out / "dpo").exists() else []  # no config without rows
    rejected = {r["rejected_trace_id"] for r in pairs}
    assert not rejected & {t for t, h in traces.items() if h == other}


def test_a_template_fingerprint_id_is_a_capture_id_in_the_later_layout(tmp_path: Path) -> None:
    """The later capture code ids a template question by a 16-hex fingerprint of the template
    and its parameters: not the content address, and not an error in that layout. In the
    seeds' layout, whose id is defined as the content address, it stays a failed check."""
    fingerprint = "0123456789abcdef"
    record = producer_line(14, id=fingerprint)
    out = build_file(tmp_path, "v2", [record])
    (question,) = table(out, "questions")
    q = record["question"]
    assert question["capture_id"] == fingerprint
    assert question["question_id"] == question_id(q["question_text"], q["hint"])
    assert all(not e["checks"] for e in table(out, "episodes"))
    seeds = next(generate_episodes(1, 14))
    seeds["question"]["id"] = fingerprint
    (row,) = table(build_file(tmp_path, "seeds", [seeds]), "episodes")
    assert "question_id_mismatch" in row["checks"]


def falsy_answers(seed: int, answer: object) -> dict:
    """A capture_v2 episode as the later capture code writes one whose every trace
    submitted ``answer`` (falsy): each hash null (``hash(x) if x else None``), every turn's
    ``submitted_answer`` null, the majority hash that of the answer and, counting the
    traces whose written hash is that one, a majority count of 0."""
    record = producer_line(seed)
    for trace in [record["gold_trace"], *record["consistency_traces"]]:
        trace.update(final_answer=answer, final_answer_hash=None, success=True)
        for turn in trace.get("turns") or []:
            turn["execution"]["submitted_answer"] = None
    runs = len(record["consistency_traces"])
    record["triangulation"] = {
        "n_consistency_runs": runs,
        "n_consistency_succeeded": runs,
        "majority_answer_hash": value_hash(answer),
        "majority_count": 0,
        "gold_matches_majority": True,
    }
    record["verified"] = True
    return record


@pytest.mark.parametrize("answer", [0, False, "", []])
def test_a_falsy_answer_written_without_its_hash_is_submitted(
    tmp_path: Path, answer: object
) -> None:
    record = falsy_answers(15, answer)
    assert record["consistency_traces"]
    out = build_file(tmp_path, "falsy", [record])
    (episode,) = table(out, "episodes")
    assert episode["verified_recomputed"] and episode["checks"] == []
    traces = table(out, "traces")
    assert all(t["submitted"] and t["final_answer_hash"] == value_hash(answer) for t in traces)
    assert all(json.loads(t["final_answer"]) == answer for t in traces)
    assert not any(t["submitted"] for t in table(out, "turns"))  # every one wrote null
    (rl,) = table(out, "rl")
    assert rl["expected_final_answer_hash"] == value_hash(answer)


def test_a_seeds_episode_whose_gold_never_submitted_has_a_null_expected_hash(
    tmp_path: Path,
) -> None:
    """The seeds' capture code copies the gold trace's hash into ``rl_verification_data``:
    null when the gold trace never submitted. Such an (unverified) episode is kept."""
    record = next(generate_episodes(1, 16))
    record["teacher_gold_trace"].update(final_answer=None, final_answer_hash=None)
    record["rl_verification_data"] = {
        "expected_final_answer_hash": None,
        "expected_final_answer": None,
    }
    record["verified"] = False
    assert isinstance(validate(record), Valid)
    out = build_file(tmp_path, "unsubmitted", [record])
    (episode,) = table(out, "episodes")
    assert episode["expected_final_answer_hash"] is None
    assert not episode["verified_recomputed"]


def near_answers(seed: int) -> dict:
    """A capture_v2 episode the capture code verified by value: consistency answers within
    ±0.1 of the gold answer, whose hashes all differ; its triangulation as that code writes
    it (the majority's cluster size, the hash of its first answer)."""
    record = producer_line(seed)
    gold, runs = record["gold_trace"], record["consistency_traces"][:3]
    assert len(runs) == 3
    for trace, answer in zip([gold, *runs], [54.36, 54.3249, 54.33, 54.29], strict=True):
        trace.update(final_answer=answer, final_answer_hash=value_hash(answer), success=True)
    record["consistency_traces"] = runs
    record["triangulation"] = {
        "n_consistency_runs": 3,
        "n_consistency_succeeded": 3,
        "majority_answer_hash": value_hash(54.3249),
        "majority_count": 3,
        "gold_matches_majority": True,
    }
    record["verified"] = True
    return record


def never_equal(seed: int) -> dict:
    """NaN answers: equal hashes, but the capture code's value comparison never matches
    NaN, so it wrote the episode unverified, the gold not matching the majority."""
    record = near_answers(seed)
    nan = float("nan")
    for trace in [record["gold_trace"], *record["consistency_traces"]]:
        trace.update(final_answer=nan, final_answer_hash=value_hash(nan))
    record["triangulation"].update(
        majority_answer_hash=value_hash(nan), majority_count=3, gold_matches_majority=False
    )
    record["verified"] = False
    return record


def near_ground_truth(seed: int) -> dict:
    record = ground_truth_verified(seed, [value_hash(54.3)])
    record["gold_trace"].update(final_answer=54.36, final_answer_hash=value_hash(54.36))
    record["triangulation"]["majority_answer_hash"] = value_hash(54.36)
    record["question"]["ground_truth"] = 54.3
    return record


def build_with(tmp: Path, name: str, records: list[dict], **options: object) -> Path:
    source = tmp / f"{name}.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp / name
    build(BuildConfig(episodes=(str(source),), out=out, rejects=tmp / f"{name}-r.jsonl", **options))
    return out


def test_an_answer_tolerance_verifies_as_the_capture_code_does(tmp_path: Path) -> None:
    """By hash (the seeds' guarantees) a tolerance match is a failed check, and the summary
    says what to do; with ``answer_tolerance`` the triangulation and ground truth the capture
    code wrote hold, and the verified ones train."""
    records = [near_answers(40), never_equal(41), near_ground_truth(42)]
    strict = build_with(tmp_path, "by-hash", records)
    checks = {e["episode_id"]: e["checks"] for e in table(strict, "episodes")}
    assert checks == {
        records[0]["episode_id"]: ["triangulation_mismatch", "verified_mismatch"],
        # its ``gold_matches_majority`` is its ``verified`` (false), as that code writes it
        records[1]["episode_id"]: [],
        records[2]["episode_id"]: ["ground_truth_mismatch", "verified_mismatch"],
    }
    manifest = json.loads((strict / "manifest.json").read_text())
    assert "--answer-tolerance 0.1" in (tolerance_hint(manifest) or "")
    loose = build_with(tmp_path, "by-value", records, answer_tolerance=0.1)
    episodes = {e["episode_id"]: e for e in table(loose, "episodes")}
    assert all(e["checks"] == [] for e in episodes.values())
    # by value NaN matches nothing, so the NaN episode is unverified, as captured
    recomputed = {k: e["verified_recomputed"] for k, e in episodes.items()}
    assert recomputed == {r["episode_id"]: r is not records[1] for r in records}
    trained = {r["episode_id"] for r in table(loose, "rl")}
    assert trained == {records[0]["episode_id"], records[2]["episode_id"]}
    # rewards get the same tolerance (``make_outcome_reward`` reads the column)
    assert {r["answer_tolerance"] for r in table(loose, "rl")} == {0.1}
    manifest = json.loads((loose / "manifest.json").read_text())
    assert manifest["options"]["answer_tolerance"] == 0.1 and tolerance_hint(manifest) is None
    too_tight = build_with(tmp_path, "tight", records[:1], answer_tolerance=0.01)
    (row,) = table(too_tight, "episodes")
    assert row["checks"] == ["triangulation_mismatch", "verified_mismatch"]


def test_the_synthetic_generator_s_own_episode_trains(tmp_path: Path) -> None:
    """The capture project's synthetic generator counts its gold trace as the majority (1,
    not 0) and names the ground truth's hash as the majority's: verified by ground truth,
    as its own code wrote it (``tests/data/capture``)."""
    source = Path(__file__).resolve().parents[2] / "data" / "capture" / "synthetic_generator.jsonl"
    record = json.loads(source.read_text(encoding="utf-8"))
    assert record["triangulation"]["majority_count"] == 1 and not record["consistency_traces"]
    out = build_file(tmp_path, "synthetic", [record])
    (episode,) = table(out, "episodes")
    assert episode["checks"] == [] and episode["verified_recomputed"]
    assert [r["episode_id"] for r in table(out, "rl")] == [record["episode_id"]]


@pytest.mark.parametrize(
    ("fixture", "answer"),
    [
        # a per-group std with a one-row group: a NaN inside a dict
        ("synthetic_generator_nan.jsonl", {"a": 1.4142135623730951, "b": None}),
        # the same writer as it stood from a789b45 to 4cea0ea: a coefficient of variation
        # over a zero mean, an inf
        ("synthetic_generator_inf.jsonl", {"a": None, "b": 0.5}),
    ],
)
def test_a_non_finite_float_the_capture_code_wrote_as_null_keeps_its_hash(
    tmp_path: Path, fixture: str, answer: dict
) -> None:
    """pydantic's ``model_dump_json`` writes NaN and ±inf inside an answer as ``null`` after
    the capture code hashed them: the hashes hold for the value with its nulls read as they
    were, so the episode trains (``tests/data/capture``)."""
    source = Path(__file__).resolve().parents[2] / "data" / "capture"
    record = json.loads((source / fixture).read_text(encoding="utf-8"))
    assert record["gold_trace"]["final_answer"] == answer
    out = build_with(tmp_path, "non-finite", [record], hash_precision=2)
    (episode,) = table(out, "episodes")
    assert episode["checks"] == [] and episode["verified_recomputed"]
    (question,) = table(out, "questions")
    assert question["checks"] == []
    assert [r["episode_id"] for r in table(out, "rl")] == [record["episode_id"]]


def test_the_later_layout_writes_verified_as_gold_matches_majority(tmp_path: Path) -> None:
    """The capture project's episode writer sets ``gold_matches_majority`` to the
    verification's result, a comparison by value: an answer holding a NaN (a group's mean
    over no values) matches nothing by value though every hash agrees, so it wrote ``false``
    beside a majority of the gold answer's own hash. That is what it means, not a
    ``triangulation_mismatch`` (``tests/data/capture``)."""
    source = Path(__file__).resolve().parents[2] / "data" / "capture"
    record = json.loads((source / "episode_gen_nan_group.jsonl").read_text(encoding="utf-8"))
    meta = record["triangulation"]
    assert meta["majority_answer_hash"] == record["gold_trace"]["final_answer_hash"]
    assert not meta["gold_matches_majority"] and not record["verified"]
    out = build_with(tmp_path, "nan-group", [record], hash_precision=2)
    (episode,) = table(out, "episodes")
    assert episode["checks"] == []
    assert [r["episode_id"] for r in table(out, "prm")] == [record["episode_id"]]
    assert not (out / "rl").exists() or table(out, "rl") == []
