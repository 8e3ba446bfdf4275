"""Integrity checks: each one fires on exactly the defect it describes, and not on a clean episode.

Most tests go through ``Normalizer.episode`` (the way a build runs the checks) and assert the
exact set of failed checks, so a check that fires too eagerly breaks the clean cases.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from builder import errors as exit_codes
from builder.cli import episodes as cli
from builder.contract.hashing import question_id, value_hash
from builder.normalize import Normalizer, checks, hook_dag
from schemas import vocabulary
from schemas.episode import Episode, ExecutionTrace, Question, Turn


def failed(
    make: SimpleNamespace, record: dict[str, Any], normalizer: Normalizer | None = None
) -> list[str]:
    return (normalizer or Normalizer()).episode(make.valid(record))


def test_factory_episodes_are_clean(make: SimpleNamespace) -> None:
    assert failed(make, make.episode()) == []
    assert failed(make, make.episode(gold=make.flat_trace(42))) == []
    assert failed(make, make.episode(verified=False)) == []  # verified: false is never a lie
    no_hint = make.episode(q=make.question(hint=None))
    assert failed(make, no_hint) == []


# ---------------------------------------------------------------- question id


def test_question_id_mismatch(make: SimpleNamespace) -> None:
    record = make.episode()
    record["question"]["question_text"] += " (in euros)"
    assert failed(make, record) == [vocabulary.QUESTION_ID_MISMATCH]
    record = make.episode()
    record["question"]["hint"] = "Another hint."
    assert failed(make, record) == [vocabulary.QUESTION_ID_MISMATCH]


def test_question_id_with_empty_hint_matches_null_hint(make: SimpleNamespace) -> None:
    q = make.question(hint="")
    q["id"] = question_id(q["question_text"], None)
    assert failed(make, make.episode(q=q)) == []


def test_question_check_on_a_bank_question(make: SimpleNamespace) -> None:
    good = Question.model_validate(make.question())
    assert checks.check_question(good) == []
    bad = Question.model_validate(make.question() | {"id": "0" * 16})
    assert checks.check_question(bad) == [vocabulary.QUESTION_ID_MISMATCH]


# ---------------------------------------------------------------- answer hashes


def test_final_answer_hash_mismatch_on_gold(make: SimpleNamespace) -> None:
    record = make.episode()
    record["teacher_gold_trace"]["final_answer"] = "42"  # the string, hash is of the number
    assert failed(make, record) == [vocabulary.FINAL_ANSWER_HASH_MISMATCH]


def test_final_answer_hash_mismatch_on_a_consistency_trace(make: SimpleNamespace) -> None:
    record = make.episode()
    record["consistency_traces"][1]["final_answer"] = 42.0
    assert failed(make, record) == [vocabulary.FINAL_ANSWER_HASH_MISMATCH]


def test_unsubmitted_trace_has_no_answer_hash_to_check(make: SimpleNamespace) -> None:
    record = make.episode()
    failed_trace = record["consistency_traces"][2]
    assert failed_trace["final_answer_hash"] is None
    failed_trace["final_answer"] = {"partial": [1, 2]}
    assert failed(make, record) == []


def test_final_answer_check_direct(make: SimpleNamespace) -> None:
    trace = Episode.model_validate(make.episode()).teacher_gold_trace
    assert checks.check_final_answer(trace, "42") == []
    assert checks.check_final_answer(trace, '"42"') == [vocabulary.FINAL_ANSWER_HASH_MISMATCH]


@pytest.mark.parametrize("configured", [None, 2])
def test_a_hash_of_the_other_scheme_is_named_as_such(make: SimpleNamespace, configured) -> None:
    # The capture side hashed with one scheme; the build is configured with the other.
    captured = 1 if configured is None else None
    gold = make.turns_trace(54.321) | {"final_answer_hash": value_hash(54.321, captured)}
    trace = ExecutionTrace.model_validate(gold)
    assert checks.check_final_answer(trace, "54.321", captured) == []
    other = checks.check_final_answer(trace, "54.321", configured)
    if configured is None:  # rounded to 1 place: neither exact nor the default rounding
        assert other == [vocabulary.FINAL_ANSWER_HASH_MISMATCH]
    else:
        assert other == [vocabulary.HASH_SCHEME_MISMATCH]
    record = make.episode(gold=make.turns_trace(54.321))  # hashed exactly
    assert failed(make, record) == []
    for rounded in (record["teacher_gold_trace"], *record["consistency_traces"]):
        if rounded.get("final_answer_hash") == value_hash(54.321):
            rounded["final_answer_hash"] = value_hash(54.321, 2)
    assert checks.check_final_answer(
        ExecutionTrace.model_validate(record["teacher_gold_trace"]), "54.321"
    ) == [vocabulary.HASH_SCHEME_MISMATCH]


def test_expected_answer_hash_mismatch(make: SimpleNamespace) -> None:
    record = make.episode()
    record["rl_verification_data"]["expected_final_answer"] = "42"
    assert failed(make, record) == [vocabulary.EXPECTED_ANSWER_HASH_MISMATCH]
    record = make.episode()
    record["rl_verification_data"]["expected_final_answer_hash"] = value_hash(41)
    assert failed(make, record) == [vocabulary.EXPECTED_ANSWER_HASH_MISMATCH]


def test_an_expected_answer_that_is_not_the_gold_s_is_flagged(make: SimpleNamespace) -> None:
    """The capture code writes the gold's answer as the RL target: another one, hashed
    right, would reward what the episode did not verify. Within the answer tolerance by
    value it is the gold's; and a gold that never submitted has nothing to compare."""
    record = make.episode()
    record["rl_verification_data"] = {
        "expected_final_answer": 43,
        "expected_final_answer_hash": value_hash(43),
    }
    assert failed(make, record) == [vocabulary.EXPECTED_ANSWER_NOT_GOLD]
    record["rl_verification_data"] = {
        "expected_final_answer": 42.05,
        "expected_final_answer_hash": value_hash(42.05),
    }
    assert failed(make, record) == [vocabulary.EXPECTED_ANSWER_NOT_GOLD]
    assert failed(make, record, Normalizer(answer_tolerance=0.1)) == []


def test_expected_answer_without_rl_data_is_not_checked(make: SimpleNamespace) -> None:
    record = make.episode()
    del record["rl_verification_data"]
    assert failed(make, record) == []


# ---------------------------------------------------------------- triangulation


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("n_consistency_runs", lambda v: v + 1),
        ("n_consistency_succeeded", lambda v: v - 1),
        ("majority_answer_hash", lambda v: value_hash(7)),
        ("majority_answer_hash", lambda v: None),
        ("majority_count", lambda v: v + 1),
        ("gold_matches_majority", lambda v: not v),
    ],
)
def test_triangulation_mismatch_on_each_field(
    make: SimpleNamespace, field: str, change: Any
) -> None:
    record = make.episode()
    meta = record["triangulation_metadata"]
    meta[field] = change(meta[field])
    assert failed(make, record) == [vocabulary.TRIANGULATION_MISMATCH]


def test_triangulation_holds_for_a_tie_and_for_no_submissions(make: SimpleNamespace) -> None:
    tie = make.episode(consistency=[make.flat_trace(42), make.flat_trace(7)])
    assert tie["triangulation_metadata"]["majority_count"] == 1
    assert failed(make, tie) == []
    # claiming the other tied answer as the majority is also consistent with the traces
    tie["triangulation_metadata"]["majority_answer_hash"] = value_hash(7)
    tie["triangulation_metadata"]["gold_matches_majority"] = False
    tie["verified"] = False
    assert failed(make, tie) == []
    nothing = make.episode(consistency=[make.flat_trace(1, submitted=False, success=False)])
    assert nothing["triangulation_metadata"]["majority_answer_hash"] is None
    assert failed(make, nothing) == []


def test_the_seeds_code_wrote_verified_as_gold_matches_majority(make: SimpleNamespace) -> None:
    # Its majority counts exact hashes, while ``gold_matches_majority`` is its ``verified``,
    # which it decided within a float tolerance: gold 54.36 against 54.33 / 54.31 / 60 / 60.
    gold, runs = make.flat_trace(54.36), [make.flat_trace(a) for a in (54.33, 54.31, 60, 60)]
    record = make.episode(gold=gold, consistency=runs, verified=True)
    meta = record["triangulation_metadata"]
    assert (meta["majority_answer_hash"], meta["majority_count"]) == (value_hash(60), 2)
    meta["gold_matches_majority"] = True
    # By hash the gold is not verified (checked apart); the triangulation is as written.
    assert failed(make, record) == [vocabulary.VERIFIED_MISMATCH]
    meta["majority_count"] = 4  # the majority is still counted by exact hash
    assert failed(make, record) == [vocabulary.TRIANGULATION_MISMATCH, vocabulary.VERIFIED_MISMATCH]
    meta["majority_count"] = 2
    record["verified"] = False  # neither the hashes nor ``verified`` say the gold matches
    assert failed(make, record) == [vocabulary.TRIANGULATION_MISMATCH]
    meta["gold_matches_majority"] = False
    assert failed(make, record) == []


def test_validate_takes_the_answer_tolerance_as_build_does(
    make: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold, runs = make.flat_trace(54.36), [make.flat_trace(a) for a in (54.33, 54.31, 60, 60)]
    record = make.episode(gold=gold, consistency=runs, verified=True)
    record["triangulation_metadata"]["gold_matches_majority"] = True
    path = tmp_path / "e.jsonl"
    path.write_bytes(make.line(record))
    assert cli.main(["validate", "--strict", str(path)]) == exit_codes.REFUSED
    assert "verified_mismatch" in capsys.readouterr().err
    assert cli.main(["validate", "--strict", "--answer-tolerance", "0.1", str(path)]) == 0
    assert "1 valid, 0 rejected" in capsys.readouterr().out


def test_with_a_tolerance_a_nan_answer_verifies_nothing(make: SimpleNamespace) -> None:
    """By hash every NaN answer is one answer; compared by value, as the capture code that
    wrote ``verified: false`` compares, NaN matches nothing: claimed verified, it is a
    ``verified_mismatch`` there, and recomputed it is false."""
    nan = float("nan")
    record = make.episode(
        gold=make.flat_trace(nan), consistency=[make.flat_trace(nan), make.flat_trace(nan)]
    )
    assert failed(make, record) == []  # by hash: gold is the majority
    tolerant = Normalizer(answer_tolerance=0.1)
    assert failed(make, record, tolerant) == [vocabulary.VERIFIED_MISMATCH]
    record["verified"] = False
    record["triangulation_metadata"]["gold_matches_majority"] = False
    tolerant = Normalizer(answer_tolerance=0.1)
    tolerant.episode(make.valid(record))
    (row,) = tolerant.take_tables()["episodes"].to_pylist()
    assert row["verified_recomputed"] is False


def test_with_a_tolerance_a_nan_answer_still_matches_its_ground_truth_by_hash(
    make: SimpleNamespace,
) -> None:
    """The capture side's ground-truth strategy (no consistency traces) tries the hash before
    the value: a NaN answer with its NaN ground truth's hash is verified, tolerance or not
    (by value alone NaN matches nothing, as the triangulation test above shows)."""
    nan = float("nan")
    q = make.question(ground_truth=nan, ground_truth_hash=value_hash(nan))
    record = make.episode(q=q, gold=make.flat_trace(nan), consistency=[], verified=True)
    episode = Episode.model_validate(record)
    assert checks.verified_by_ground_truth(episode) is True
    assert checks.verified_by_ground_truth(episode, tolerance=0.1) is True
    other = make.episode(q=q, gold=make.flat_trace(float("inf")), consistency=[], verified=True)
    assert checks.verified_by_ground_truth(Episode.model_validate(other), tolerance=0.1) is False


def test_no_triangulation_metadata_means_no_triangulation_check(make: SimpleNamespace) -> None:
    record = make.episode()
    del record["triangulation_metadata"]
    assert failed(make, record) == []


# ---------------------------------------------------------------- verified


def test_verified_mismatch_gold_did_not_submit(make: SimpleNamespace) -> None:
    record = make.episode(gold=make.turns_trace(42, submitted=False), verified=True)
    assert failed(make, record) == [vocabulary.VERIFIED_MISMATCH]


def test_verified_mismatch_gold_run_failed(make: SimpleNamespace) -> None:
    record = make.episode(gold=make.turns_trace(42, success=False), verified=True)
    assert failed(make, record) == [vocabulary.VERIFIED_MISMATCH]


def test_verified_mismatch_gold_is_not_the_majority(make: SimpleNamespace) -> None:
    consistency = [make.flat_trace(7), make.flat_trace(7), make.flat_trace(42)]
    record = make.episode(consistency=consistency, verified=True)
    assert failed(make, record) == [vocabulary.VERIFIED_MISMATCH]


def test_verified_mismatch_no_consistency_trace_matched(make: SimpleNamespace) -> None:
    consistency = [make.flat_trace(0, success=False, submitted=False)] * 2
    record = make.episode(consistency=consistency, verified=True)
    assert failed(make, record) == [vocabulary.VERIFIED_MISMATCH]
    record = make.episode(consistency=[], verified=True)
    assert failed(make, record) == [vocabulary.VERIFIED_MISMATCH]


def test_recompute_verified_direct(make: SimpleNamespace) -> None:
    ep = Episode.model_validate(make.episode())
    assert checks.recompute_verified(ep, checks.consensus(ep.consistency_traces)) is True
    votes = checks.consensus(ep.consistency_traces)
    assert (votes.runs, votes.succeeded, votes.majority_count) == (3, 2, 2)
    assert votes.majority_hashes == {value_hash(42)}
    assert checks.consensus([]).majority_hashes == set()


# ---------------------------------------------------------------- ground truth


def test_ground_truth_mismatch_question_carries_a_different_answer(make: SimpleNamespace) -> None:
    q = make.question(ground_truth=43, ground_truth_hash=value_hash(43))
    assert failed(make, make.episode(q=q)) == [vocabulary.GROUND_TRUTH_MISMATCH]
    q = make.question(ground_truth=42, ground_truth_hash=value_hash(42))
    assert failed(make, make.episode(q=q)) == []


def test_ground_truth_mismatch_hash_disagrees_with_carried_truth(make: SimpleNamespace) -> None:
    q = make.question(ground_truth="42", ground_truth_hash=value_hash(42))
    assert failed(make, make.episode(q=q)) == [vocabulary.GROUND_TRUTH_MISMATCH]


def test_ground_truth_hash_alone_is_compared_with_the_gold_answer(make: SimpleNamespace) -> None:
    # A question may carry only the hash of its answer; absent ground_truth is not `null`.
    assert failed(make, make.episode(q=make.question(ground_truth_hash=value_hash(42)))) == []
    bad = make.question(ground_truth_hash=value_hash(41))
    assert failed(make, make.episode(q=bad)) == [vocabulary.GROUND_TRUTH_MISMATCH]
    # but an explicit null ground truth is a value, and is checked
    null = make.question(ground_truth=None, ground_truth_hash=value_hash(42))
    assert checks.check_question(Question.model_validate(null)) == [
        vocabulary.GROUND_TRUTH_MISMATCH
    ]


def test_ground_truth_mismatch_via_the_question_bank(make: SimpleNamespace) -> None:
    q = make.question()
    for truth, expected in ((43, [vocabulary.GROUND_TRUTH_MISMATCH]), (42, [])):
        normalizer = Normalizer()
        bank = Question.model_validate(
            q | {"ground_truth": truth, "ground_truth_hash": value_hash(truth)}
        )
        normalizer.question(bank, "synthetic", "bank.jsonl", 1)
        assert normalizer.ground_truth == {q["id"]: value_hash(truth)}
        assert failed(make, make.episode(q=q), normalizer) == expected


def test_an_unverified_episode_whose_answer_is_not_the_ground_truth_fails_no_check(
    make: SimpleNamespace,
) -> None:
    """The capture code writes ``verified: false`` when the gold answer is not the ground
    truth (nor the consistency majority): an honest line, which ``prm`` trains on as a
    negative. Verified as captured or as recomputed, the same answer is a failed check
    (recomputed verified, ``prm`` would label it right)."""
    q = make.question(ground_truth=43, ground_truth_hash=value_hash(43))
    others = [make.flat_trace(7), make.flat_trace(7)]
    honest = make.episode(q=q, consistency=others)
    assert honest["verified"] is False
    assert failed(make, honest) == []
    assert failed(make, make.episode(q=q, verified=True)) == [vocabulary.GROUND_TRUTH_MISMATCH]
    # the consistency traces agree with the gold answer, so it recomputes verified
    assert failed(make, make.episode(q=q, verified=False)) == [vocabulary.GROUND_TRUTH_MISMATCH]
    normalizer = Normalizer()  # a bank's ground truth alike
    bank = make.question()
    normalizer.question(
        Question.model_validate(bank | {"ground_truth": 43, "ground_truth_hash": value_hash(43)}),
        "synthetic",
        "bank.jsonl",
        1,
    )
    assert failed(make, make.episode(q=bank, consistency=others), normalizer) == []
    assert failed(make, make.episode(q=bank, verified=True), normalizer) == [
        vocabulary.GROUND_TRUTH_MISMATCH
    ]


def test_ground_truth_is_not_checked_against_an_unsubmitted_gold(make: SimpleNamespace) -> None:
    q = make.question(ground_truth=43, ground_truth_hash=value_hash(43))
    record = make.episode(q=q, gold=make.turns_trace(42, submitted=False))
    assert failed(make, record) == []


# ---------------------------------------------------------------- hooks


def test_hook_listing_mismatch_when_trace_level_hash_differs(make: SimpleNamespace) -> None:
    gold = make.turns_trace(42)
    listed = [h for t in gold["turns"] for h in t["execution"]["hooks"]]
    gold["hooks"] = [make.copy(h) for h in listed]
    assert failed(make, make.episode(gold=gold)) == []
    gold["hooks"][1]["value_hash"] = value_hash(41)
    assert failed(make, make.episode(gold=gold)) == [vocabulary.HOOK_LISTING_MISMATCH]


def test_hook_listing_mismatch_when_a_checkpoint_is_listed_only_once(make: SimpleNamespace) -> None:
    gold = make.turns_trace(42)
    listed = [h for t in gold["turns"] for h in t["execution"]["hooks"]]
    gold["hooks"] = [make.copy(listed[0])]  # the trace-level listing lacks "n"
    assert failed(make, make.episode(gold=gold)) == [vocabulary.HOOK_LISTING_MISMATCH]
    gold["hooks"] = [make.copy(h) for h in listed] + [make.hook("extra", 0)]
    assert failed(make, make.episode(gold=gold)) == [vocabulary.HOOK_LISTING_MISMATCH]


def test_hook_unknown_dependency(make: SimpleNamespace) -> None:
    hooks = [make.hook("a", 1), make.hook("b", 2, ["a", "nowhere"])]
    record = make.episode(gold=make.flat_trace(42, hooks=hooks))
    assert failed(make, record) == [vocabulary.HOOK_UNKNOWN_DEPENDENCY]


def test_hook_dependency_by_code_line_when_unnamed(make: SimpleNamespace) -> None:
    hooks = [make.hook(None, 1, code_line="df.dropna()"), make.hook("b", 2, ["df.dropna()"])]
    assert failed(make, make.episode(gold=make.flat_trace(42, hooks=hooks))) == []


def test_hook_cycle(make: SimpleNamespace) -> None:
    hooks = [make.hook("a", 1, ["c"]), make.hook("b", 2, ["a"]), make.hook("c", 3, ["b"])]
    record = make.episode(gold=make.flat_trace(42, hooks=hooks))
    assert failed(make, record) == [vocabulary.HOOK_CYCLE]
    record = make.episode(gold=make.flat_trace(42, hooks=[make.hook("self", 1, ["self"])]))
    assert failed(make, record) == [vocabulary.HOOK_CYCLE]


def test_hook_dag_checks_in_turn_form(make: SimpleNamespace) -> None:
    turns = [
        make.turn(0, "a = 1", hooks=[make.hook("a", 1, ["b"])]),
        make.turn(1, "b = a", hooks=[make.hook("b", 1, ["a"])]),
        make.turn(2, "submit(b)", submitted=42),
    ]
    record = make.episode(gold=make.turns_trace(42, turns=turns))
    assert failed(make, record) == [vocabulary.HOOK_CYCLE]


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ([], []),
        ([("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"])], []),  # diamond
        ([("a", []), ("a", ["a"])], []),  # reassignment: df = df.dropna()
        ([("a", ["a"])], [vocabulary.HOOK_CYCLE]),  # depends on itself, nothing earlier
        ([("b", ["a"]), ("a", [])], []),  # out of execution order, still a DAG
        ([("a", ["b"]), ("b", ["a"]), ("a", [])], [vocabulary.HOOK_CYCLE]),  # b needs the first a
        ([("a", ["b"])], [vocabulary.HOOK_UNKNOWN_DEPENDENCY]),
        (
            [("a", ["b", "x"]), ("b", ["a"])],
            [vocabulary.HOOK_UNKNOWN_DEPENDENCY, vocabulary.HOOK_CYCLE],
        ),
    ],
)
def test_check_hook_dag_direct(edges: list[tuple[str, list[str]]], expected: list[str]) -> None:
    assert hook_dag.check_hook_dag(edges) == expected


def test_check_hook_dag_long_chain_without_recursion() -> None:
    chain = [(f"h{i}", [f"h{i - 1}"] if i else []) for i in range(20_000)]
    assert hook_dag.check_hook_dag(chain) == []
    assert hook_dag.check_hook_dag([*chain[1:], ("h0", ["h19999"])]) == [vocabulary.HOOK_CYCLE]


# ---------------------------------------------------------------- corrections


def correction_turns(
    make: SimpleNamespace, target: int, target_failed: bool = True
) -> list[dict[str, Any]]:
    return [
        make.turn(0, "df = load()"),
        make.turn(1, "df['prices']", success=not target_failed, stderr="KeyError: 'prices'"),
        make.turn(2, "df['price']", correction=make.correction(target)),
        make.turn(3, "submit(42)", submitted=42),
    ]


def test_correction_of_an_earlier_failed_turn_is_valid(make: SimpleNamespace) -> None:
    record = make.episode(gold=make.turns_trace(42, turns=correction_turns(make, 1)))
    assert failed(make, record) == []


@pytest.mark.parametrize(
    ("target", "target_failed"),
    [(0, True), (1, False), (2, True), (3, True), (9, True)],
    ids=["succeeded-turn", "target-succeeded", "itself", "later-turn", "no-such-turn"],
)
def test_correction_target_invalid(make: SimpleNamespace, target: int, target_failed: bool) -> None:
    turns = correction_turns(make, target, target_failed)
    record = make.episode(gold=make.turns_trace(42, turns=turns))
    assert failed(make, record) == [vocabulary.CORRECTION_TARGET_INVALID]


def test_check_corrections_direct(make: SimpleNamespace) -> None:
    turns = [Turn.model_validate(t) for t in correction_turns(make, 1)]
    assert checks.check_corrections(turns) == []
    assert checks.check_corrections(turns[2:]) == [vocabulary.CORRECTION_TARGET_INVALID]


def test_all_check_kinds_are_listed_with_their_meaning() -> None:
    used = {v for k, v in vars(checks).items() if isinstance(v, str) and v == k.lower()}
    assert used <= set(vocabulary.ALL_CHECKS) and len(vocabulary.ALL_CHECKS) == 16
    assert all(vocabulary.MEANINGS[kind].strip() for kind in vocabulary.ALL_CHECKS)
