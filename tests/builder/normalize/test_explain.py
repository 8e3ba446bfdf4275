"""Where a failed check is (builder.normalize.explain): the JSON path of the field that disagrees and
what it should be, as a ``--strict`` reject says it, in the line's own layout."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from builder.config import BuildConfig
from builder.contract.hashing import question_id, value_hash
from builder.normalize.explain import explain_line
from builder.pipeline import build
from builder.sources.inputs import SourceLine
from samples.variants import to_capture_v2


def placed(record: dict, kind: str, raw: bytes | None = None) -> list[tuple[str, str]]:
    raw = raw if raw is not None else json.dumps(record).encode()
    return [(e.path, e.message) for e in explain_line(raw, [kind], None)]


def test_a_wrong_hash_names_its_trace_and_the_hash_it_should_be(make: SimpleNamespace) -> None:
    record = make.episode("e")
    record["consistency_traces"][1]["final_answer_hash"] = "0" * 16
    assert placed(record, "final_answer_hash_mismatch") == [
        (
            "$.consistency_traces[1].final_answer_hash",
            f"final_answer_hash_mismatch: {'0' * 16} is not the hash of final_answer "
            f"(this build's: {value_hash(42)})",
        )
    ]


def test_a_wrong_question_id_gives_the_content_address(make: SimpleNamespace) -> None:
    record = make.episode("e")
    record["question"]["id"] = "f" * 16
    q = record["question"]
    address = question_id(q["question_text"], q["hint"])
    assert placed(record, "question_id_mismatch") == [
        (
            "$.question.id",
            f"question_id_mismatch: '{'f' * 16}' is not the content address of the question's "
            f"text and hint ({address})",
        )
    ]


def test_a_triangulation_lists_every_hash_and_what_the_hashes_give(
    make: SimpleNamespace,
) -> None:
    answers = [1, 2, 3, 4, 5, 6, 6]
    record = make.episode("e", consistency=[make.flat_trace(a) for a in answers])
    record["triangulation_metadata"]["majority_count"] = 5
    ((path, message),) = placed(record, "triangulation_mismatch")
    assert path == "$.triangulation_metadata"
    # Six distinct hashes: five shown, then how many more, never one dropped silently.
    assert f"{value_hash(6)} ×2, " in message and message.count(" ×1") == 4
    assert message.count(" ×") == 5 and " and 1 more; " in message
    assert message.endswith(
        f"by answer hash, majority_answer_hash {value_hash(6)}, majority_count 2, "
        "gold_matches_majority false"
    )


def test_hooks_name_the_dependency_and_the_cycle(make: SimpleNamespace) -> None:
    record = make.episode("e")
    turns = record["teacher_gold_trace"]["turns"]
    turns[1]["execution"]["hooks"][0]["depends_on"] = ["df", "nowhere"]
    assert placed(record, "hook_unknown_dependency") == [
        (
            "$.teacher_gold_trace.turns[1].execution.hooks[0].depends_on[1]",
            "hook_unknown_dependency: 'nowhere' names no hook of its trace",
        )
    ]
    turns[0]["execution"]["hooks"][0]["depends_on"] = ["n"]
    turns[1]["execution"]["hooks"][0]["depends_on"] = ["df"]
    assert placed(record, "hook_cycle") == [
        (
            "$.teacher_gold_trace.turns",
            "hook_cycle: the depends_on edges of 'df', 'n' form a cycle",
        )
    ]


def test_a_listing_mismatch_names_the_hook_and_the_field(make: SimpleNamespace) -> None:
    """The trace-level listing disagrees with the turns': each disagreement at its own key."""
    gold = make.turns_trace(42)
    listed = [h for t in gold["turns"] for h in t["execution"]["hooks"]]
    gold["hooks"] = [make.copy(h) for h in listed] + [make.hook("extra", 0)]
    gold["hooks"][1]["value_hash"] = "f" * 16
    found = placed(make.episode("e", gold=gold), "hook_listing_mismatch")
    twin = next(
        f"$.teacher_gold_trace.turns[{i}].execution.hooks[{j}]"
        for i, t in enumerate(gold["turns"])
        for j, h in enumerate(t["execution"]["hooks"])
        if h is listed[1]
    )
    assert found == [
        (
            "$.teacher_gold_trace.hooks[1].value_hash",
            f"hook_listing_mismatch: value_hash {'f' * 16!r} here, "
            f"{listed[1]['value_hash']!r} at {twin}",
        ),
        (
            f"$.teacher_gold_trace.hooks[{len(listed)}]",
            "hook_listing_mismatch: 'extra' is listed in no turn",
        ),
    ]


def test_an_expected_answer_not_the_gold_s_is_named_with_both(make: SimpleNamespace) -> None:
    record = make.episode("e")
    record["rl_verification_data"] = {
        "expected_final_answer": 43,
        "expected_final_answer_hash": value_hash(43),
    }
    assert placed(record, "expected_answer_not_gold") == [
        (
            "$.rl_verification_data.expected_final_answer",
            "expected_answer_not_gold: 43 here, the gold trace's final_answer is 42",
        )
    ]


def test_a_correction_says_why_its_target_is_wrong(make: SimpleNamespace) -> None:
    record = make.episode("e")
    turn = record["teacher_gold_trace"]["turns"][1]
    turn["correction"] = {"corrects_turn": 0, "error_type": "KeyError", "error_message": "x"}
    assert placed(record, "correction_target_invalid") == [
        (
            "$.teacher_gold_trace.turns[1].correction.corrects_turn",
            "correction_target_invalid: 0: that turn succeeded",
        )
    ]


def test_a_repeated_key_and_an_unplaceable_kind(make: SimpleNamespace) -> None:
    raw = make.line(make.episode("e")).replace(b'"verified": ', b'"verified": false, "verified": ')
    assert placed({}, "duplicate_json_key", raw) == [
        ("$.verified", "duplicate_json_key: the key appears twice in its object")
    ]
    # a ground truth learned from another line: placed at $, by its meaning
    [(path, message)] = placed(make.episode("e"), "ground_truth_mismatch")
    assert path == "$" and message.startswith("ground_truth_mismatch: the gold trace's answer")


def test_paths_are_spelled_as_the_later_layout_spells_them(make: SimpleNamespace) -> None:
    record = to_capture_v2(make.episode("e"))
    record["gold_trace"]["final_answer_hash"] = "0" * 16
    [(path, _)] = placed(record, "final_answer_hash_mismatch")
    assert path == "$.gold_trace.final_answer_hash"


def test_a_strict_rebuild_from_the_cache_words_its_rejects_alike(
    make: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache keeps outcomes, not lines: a file replayed from it (its neighbour in the run
    changed) reads its rejected line again, so the reject is byte for byte a clean build's."""
    from builder.cache.cached_ingest import CachedIngest

    bad = make.episode("bad")
    bad["teacher_gold_trace"]["final_answer_hash"] = "0" * 16
    first_file, second_file = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first_file.write_bytes(make.line(make.episode("ok")) + b"\n" + make.line(bad) + b"\n")
    second_file.write_bytes(make.line(make.episode("ok2")) + b"\n")
    read_again: list[bool] = []
    raw_of = CachedIngest._raw_of

    def spy(self: CachedIngest, line: SourceLine) -> bytes | None:
        read_again.append(line.raw is None)
        return raw_of(self, line)

    monkeypatch.setattr(CachedIngest, "_raw_of", spy)

    def strict_build(name: str) -> bytes:
        rejects = tmp_path / f"{name}.jsonl"
        files = (str(first_file), str(second_file))
        config = BuildConfig(
            episodes=files, out=tmp_path / name, rejects=rejects, strict=True,
            max_reject_ratio=1.0, cache_dir=tmp_path / "cache",
        )  # fmt: skip
        build(config)
        return rejects.read_bytes()

    first = strict_build("first")
    with second_file.open("ab") as more:
        more.write(make.line(make.episode("ok3")) + b"\n")
    replayed = strict_build("second")
    assert read_again == [False, True]  # the second build replayed a.jsonl from the cache
    assert replayed == first
    assert json.loads(first)["path"] == "$.teacher_gold_trace.final_answer_hash"
