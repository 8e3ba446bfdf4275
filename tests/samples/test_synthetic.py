"""The synthetic generator: valid, check-clean, deterministic, and the committed sample is
exactly what it generates (so the sample can always be regenerated, never hand-edited)."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from builder.contract.hashing import question_id, value_hash
from builder.normalize import Normalizer, checks
from builder.sources.inputs import InputFile, SourceLine
from builder.validate.json_lines import is_blank
from builder.validate.reject import Reject
from builder.validate.validator import Valid, Validator
from samples.episodes import generate_episode, generate_episodes
from samples.files import write_jsonl
from samples.questions import generate_questions
from samples.sample_data import write_sample
from samples.synthetic import main
from schemas.episode import Episode, Question

DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE_FILES = (
    "episodes/episodes.jsonl",
    "questions/synthetic/questions.jsonl",
    "questions/llm/questions.jsonl",
    "episodes/groups.jsonl",
    "questions/synthetic/groups.jsonl",
    "questions/llm/groups.jsonl",
    "bad/bad_lines.jsonl",
    "bad/EXPECTED.md",
)


def normalize(episodes: Iterable[dict[str, Any]], questions: Iterable[dict[str, Any]] = ()):
    """Validate and normalize like a build does; returns the normalizer's tables."""
    normalizer = Normalizer()
    for i, record in enumerate(questions, 1):
        normalizer.question(Question.model_validate(record), "synthetic", "q.jsonl", i)
    validator = Validator(Episode, "episode_id")
    for i, episode in enumerate(episodes, 1):
        result = validator.validate(SourceLine("e.jsonl", i, orjson.dumps(episode)))
        assert isinstance(result, Valid), str(result)
        normalizer.episode(result)
    return normalizer.take_tables()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def traces(episode: dict[str, Any]) -> list[dict[str, Any]]:
    return [episode["teacher_gold_trace"], *episode["consistency_traces"]]


# --------------------------------------------------------------------------- (a) clean


def test_generated_episodes_validate_and_pass_every_check() -> None:
    episodes = list(generate_episodes(500, seed=11))
    for episode in episodes:
        Episode.model_validate(episode)
    tables = normalize(episodes, generate_questions(60, 11, "synthetic"))
    rows = tables["episodes"].to_pylist()
    assert len(rows) == 500
    assert [r["episode_id"] for r in rows if r["checks"]] == []
    assert all(r["verified"] == r["verified_recomputed"] for r in rows)
    assert all(not r["checks"] for r in tables["questions"].to_pylist())
    assert all(not r["checks"] for r in tables["traces"].to_pylist())
    verified = sum(r["verified"] for r in rows) / len(rows)
    assert 0.6 <= verified <= 0.9


@pytest.mark.parametrize("form", ["flat", "turns"])
def test_generate_episode_forces_the_trace_form(form: str) -> None:
    rng = random.Random(5)
    episodes = [generate_episode(rng, i, form=form) for i in range(40)]
    for episode in episodes:
        for trace in traces(episode):
            assert ("turns" in trace) == (form == "turns")
    rows = normalize(episodes)["episodes"].to_pylist()
    assert all(not r["checks"] for r in rows)


def test_verified_and_triangulation_agree_with_the_checks() -> None:
    for episode in generate_episodes(200, seed=2):
        model = Episode.model_validate(episode)
        votes = checks.consensus(model.consistency_traces)
        assert model.verified == checks.recompute_verified(model, votes)
        assert checks.check_triangulation(model, votes) == []


def test_hashes_come_from_builder_hashing() -> None:
    for episode in generate_episodes(100, seed=4):
        q = episode["question"]
        assert q["id"] == question_id(q["question_text"], q["hint"])
        for trace in traces(episode):
            if trace["final_answer_hash"] is not None:
                assert trace["final_answer_hash"] == value_hash(trace["final_answer"])
            for turn in trace.get("turns") or []:
                for hook in turn["execution"]["hooks"]:
                    if not isinstance(hook["value"], dict):  # scalars are stored whole
                        assert hook["value_hash"] == value_hash(hook["value"])
        rl = episode.get("rl_verification_data")
        if rl is not None:
            assert rl["expected_final_answer_hash"] == value_hash(rl["expected_final_answer"])
    for record in generate_questions(40, 4, "synthetic"):
        assert record["ground_truth_hash"] == value_hash(record["ground_truth"])


def test_a_returned_episode_is_the_callers_own() -> None:
    first, second = generate_episodes(2, seed=9, question_pool=1)
    first["teacher_gold_trace"]["hooks"].clear()
    for trace in traces(first):
        for turn in trace.get("turns") or []:
            for hook in turn["execution"]["hooks"]:
                hook["value"] = "mutated"
    again = list(generate_episodes(2, seed=9, question_pool=1))
    assert again[1] == second
    assert "mutated" not in orjson.dumps(second).decode()


# --------------------------------------------------------------------------- (b) determinism


def test_same_seed_same_output_different_seed_different() -> None:
    a = list(generate_episodes(60, seed=3))
    assert a == list(generate_episodes(60, seed=3))
    assert a != list(generate_episodes(60, seed=4))
    for kind in ("synthetic", "llm"):
        assert list(generate_questions(20, 3, kind)) == list(generate_questions(20, 3, kind))
        assert list(generate_questions(20, 3, kind)) != list(generate_questions(20, 4, kind))


def test_compressed_output_is_deterministic_and_readable(tmp_path: Path) -> None:
    for suffix in (".jsonl", ".jsonl.gz", ".jsonl.zst"):
        one, two = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
        assert main(["--episodes", "30", "--seed", "1", "--out", str(one)]) == 0
        main(["--episodes", "30", "--seed", "1", "--out", str(two)])
        assert one.read_bytes() == two.read_bytes()
        lines = list(InputFile(str(one), 1 << 24).lines())
        assert [orjson.loads(line.raw) for line in lines] == list(generate_episodes(30, 1))


def test_write_jsonl_counts_and_streams(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    assert write_jsonl(path, generate_questions(7, 0, "llm")) == 7
    assert len(path.read_bytes().splitlines()) == 7


# --------------------------------------------------------------------------- (c) sample


def test_committed_sample_equals_a_fresh_generation(tmp_path: Path) -> None:
    write_sample(tmp_path)
    for name in SAMPLE_FILES:
        committed = DATA / name
        assert committed.is_file(), (
            f"{committed} missing: run python -m samples.synthetic --sample data"
        )
        assert committed.read_bytes() == (tmp_path / name).read_bytes(), (
            f"data/{name} differs from write_sample(); regenerate it with "
            "python -m samples.synthetic --sample data"
        )


def test_committed_sample_is_small() -> None:
    assert sum((DATA / name).stat().st_size for name in SAMPLE_FILES) < 4_200_000


# --------------------------------------------------------------------------- (d) coverage


def test_sample_episodes_are_clean_against_the_question_banks() -> None:
    episodes = read_jsonl(DATA / "episodes" / "episodes.jsonl")
    synthetic = read_jsonl(DATA / "questions" / "synthetic" / "questions.jsonl")
    tables = normalize(episodes, synthetic)
    assert all(not r["checks"] for r in tables["episodes"].to_pylist())
    bank = {q["id"]: q["ground_truth_hash"] for q in synthetic}
    shared = [e for e in episodes if e["question"]["id"] in bank]
    assert len({e["question"]["id"] for e in shared}) >= 20
    for episode in shared:
        gold_hash = episode["teacher_gold_trace"]["final_answer_hash"]
        assert gold_hash in (None, bank[episode["question"]["id"]])


def test_sample_covers_the_interesting_cases() -> None:
    episodes = read_jsonl(DATA / "episodes" / "episodes.jsonl")
    all_traces = [t for e in episodes for t in traces(e)]
    turn_traces = [t for t in all_traces if t.get("turns")]
    flat_traces = [t for t in all_traces if "turns" not in t]
    turns = [turn for t in turn_traces for turn in t["turns"]]
    hooks = [h for turn in turns for h in turn["execution"]["hooks"]]
    consistency = [t for e in episodes for t in e["consistency_traces"]]
    found = Counter(
        episodes=len(episodes),
        flat=len(flat_traces),
        turn=len(turn_traces),
        corrections=sum(turn["correction"] is not None for turn in turns),
        failed_consistency=sum(not t["execution_success"] for t in consistency),
        wrong_consistency=sum(
            t["final_answer_hash"] not in (None, e["teacher_gold_trace"]["final_answer_hash"])
            for e in episodes
            for t in e["consistency_traces"]
        ),
        unverified=sum(not e["verified"] for e in episodes),
        frame_hooks=sum(
            isinstance(h["value"], dict) and h["value"].get("type") == "DataFrame" for h in hooks
        ),
        series_hooks=sum(
            isinstance(h["value"], dict) and h["value"].get("type") == "Series" for h in hooks
        ),
        unnamed_hooks=sum(h["variable_name"] is None for h in hooks),
        no_sft=sum("conversation_for_sft" not in e for e in episodes),
        duplicated_listing=sum(bool(t["hooks"]) for t in turn_traces),
        extras=sum("capture_host" in e for e in episodes),
        mixed_forms=sum(len({"turns" in t for t in traces(e)}) == 2 for e in episodes),
    )
    assert all(count >= 3 for count in found.values()), found
    assert 0.15 <= found["unverified"] / found["episodes"] <= 0.35
    for error in ("KeyError", "NameError", "ValueError"):
        assert any(
            turn["correction"] and turn["correction"]["error_type"] == error for turn in turns
        ), error
    answer_types = {type(e["teacher_gold_trace"]["final_answer"]).__name__ for e in episodes}
    assert {"int", "float", "str", "list", "dict", "bool"} <= answer_types
    # The string "1" next to the number 1: same text, different JSON type, different hash.
    assert any(
        isinstance(e["teacher_gold_trace"]["final_answer"], int)
        and any(
            t["final_answer"] == str(e["teacher_gold_trace"]["final_answer"])
            for t in e["consistency_traces"]
        )
        for e in episodes
    )


def test_sample_has_questions_shared_and_rehinted() -> None:
    episodes = read_jsonl(DATA / "episodes" / "episodes.jsonl")
    per_question = Counter(e["question"]["id"] for e in episodes)
    assert max(per_question.values()) >= 3
    ids_by_text: dict[str, set[str]] = {}
    for e in episodes:
        ids_by_text.setdefault(e["question"]["question_text"], set()).add(e["question"]["id"])
    assert any(len(ids) > 1 for ids in ids_by_text.values())
    llm = read_jsonl(DATA / "questions" / "llm" / "questions.jsonl")
    assert all("ground_truth" not in q for q in llm)
    synthetic = read_jsonl(DATA / "questions" / "synthetic" / "questions.jsonl")
    for bank in (llm, synthetic):
        assert len({q["id"] for q in bank}) == len(bank) == 40
    for record in llm:
        Question.model_validate(record)


# --------------------------------------------------------------------------- bad lines


def expected_outcomes() -> dict[int, str]:
    table = (DATA / "bad" / "EXPECTED.md").read_text(encoding="utf-8")
    return {int(m[1]): m[2] for m in re.finditer(r"^\| (\d+) \| ([^|]+?) \|", table, re.M)}


def outcome(validator: Validator[Episode], line: SourceLine) -> str:
    if is_blank(line):
        return "blank"
    result = validator.validate(line)
    if isinstance(result, Valid):
        return "valid"
    assert isinstance(result, Reject)
    if result.kind == "schema":
        return f"reject schema {result.path}"
    return f"reject {result.kind}"


def test_bad_lines_fail_as_documented() -> None:
    validator = Validator(Episode, "episode_id")
    lines = list(InputFile(str(DATA / "bad" / "bad_lines.jsonl"), 1 << 24).lines())
    expected = expected_outcomes()
    assert len(lines) == len(expected) >= 14
    found = {line.number: outcome(validator, line) for line in lines}
    assert found == expected
