"""Rewards: outcome and process rewards (the credit rule), and the GRPO-style adapters run on
``rl`` rows loaded with ``datasets.load_dataset`` from a freshly built dataset folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import orjson
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from builder.config import BuildConfig
from builder.contract.hashing import value_hash
from builder.contract.rewards import (
    ProcessReward,
    make_outcome_reward,
    make_process_reward,
    outcome_reward,
    process_reward,
)
from builder.contract.stored_values import hook_record
from builder.pipeline import build
from samples.episodes import generate_episodes

# ---------------------------------------------------------------- outcome_reward


def test_outcome_reward_compares_hashes_of_normalized_values() -> None:
    assert outcome_reward(42.5, value_hash(42.5)) == 1.0
    assert outcome_reward(np.int64(3), value_hash(3)) == 1.0
    assert outcome_reward((1, 2), value_hash([1, 2])) == 1.0
    assert outcome_reward({"a": np.float64(0.5)}, value_hash({"a": 0.5})) == 1.0
    assert outcome_reward("1", value_hash(1)) == 0.0
    assert outcome_reward(1.0, value_hash(1)) == 0.0
    assert outcome_reward(None, None) == 0.0
    assert outcome_reward(object(), value_hash(1)) == 0.0  # no canonical form


def test_outcome_reward_accepts_any_of_several_valid_answers() -> None:
    accepted = [value_hash(3), value_hash([3, 4])]
    assert outcome_reward([3, 4], accepted) == 1.0
    assert outcome_reward(3, accepted) == 1.0
    assert outcome_reward(4, accepted) == 0.0
    assert outcome_reward(3, []) == 0.0  # nothing accepted: nothing scores
    outcome = make_outcome_reward(lambda c: {"answer": c})
    columns = {"expected_final_answer_hash": [value_hash(3)] * 2}
    assert outcome(completions=[3, [3, 4]], **columns) == [1.0, 0.0]
    # The rl config's accepted_answer_hashes wins over the single expected hash.
    assert outcome(completions=[3, [3, 4]], accepted_answer_hashes=[accepted] * 2, **columns) == [
        1.0,
        1.0,
    ]


def test_with_a_tolerance_an_answer_near_the_expected_one_scores() -> None:
    # The capture code's RL rubric compares answers within ±0.1: 2.72 against a gold 2.7.
    expected = value_hash(2.7)
    assert outcome_reward(2.72, expected) == 0.0  # by hash only, as the seeds define it
    assert outcome_reward(2.72, expected, None, 2.7, 0.1) == 1.0
    assert outcome_reward(2.9, expected, None, 2.7, 0.1) == 0.0
    assert outcome_reward(2.72, expected, None, tolerance=0.1) == 0.0  # no expected answer
    # compared as submitted (string keys), member by member
    series = pd.Series([1.04, 1.98], index=[2, 10])
    assert outcome_reward(series, None, 2, {"2": 1.0, "10": 2.0}, 0.1) == 1.0
    assert outcome_reward(series, None, 2, {"2": 1.0, "11": 2.0}, 0.1) == 0.0


def test_the_outcome_adapter_takes_the_rows_tolerance() -> None:
    rows = {
        "accepted_answer_hashes": [[value_hash(2.7)]] * 3,
        "expected_final_answer": ["2.7"] * 3,
        "answer_tolerance": [0.1, None, 0.1],
    }
    completions = [2.72, 2.72, 2.9]
    run = lambda c: {"answer": c}  # noqa: E731
    assert make_outcome_reward(run)(completions=completions, **rows) == [1.0, 0.0, 0.0]
    hashes_only = make_outcome_reward(run, tolerance=None)
    assert hashes_only(completions=completions, **rows) == [0.0, 0.0, 0.0]
    wider = make_outcome_reward(run, tolerance=0.5)
    assert wider(completions=completions, **rows) == [1.0, 1.0, 1.0]
    del rows["answer_tolerance"]  # a build before the column: hashes only
    assert make_outcome_reward(run)(completions=completions, **rows) == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------- process_reward: examples


def gold_hook(name: str, value: Any, *depends_on: str) -> dict[str, Any]:
    return {"name": name, "value_hash": value_hash(value), "depends_on": list(depends_on)}


ANALYSIS = [
    gold_hook("df", {"shape": [3, 2]}),
    gold_hook("m", 42.5, "df"),
    gold_hook("answer", 42.5, "m"),
]


def test_identical_trace_scores_one() -> None:
    result = process_reward(ANALYSIS, ANALYSIS)
    assert result == ProcessReward(1.0, (True, True, True), (0, 1, 2), (True, True, True))
    assert float(result) == 1.0


def test_a_dependency_credited_only_before_the_hook() -> None:
    # m (42.5) before df: m cannot be credited at 0; the second 42.5 credits m (df now done)
    # but answer, which shares m's hash, needs m credited strictly earlier: not yet.
    student = [value_hash(42.5), value_hash({"shape": [3, 2]}), value_hash(42.5)]
    result = process_reward(student, ANALYSIS)
    assert result.credited == (True, True, False)
    assert result.credited_at == (1, 2, None)
    assert result.matched == (False, True, True)
    assert result.reward == pytest.approx(2 / 3)
    # a third 42.5 completes the chain
    assert process_reward([*student, value_hash(42.5)], ANALYSIS).reward == 1.0


def test_no_hooks_score_zero() -> None:
    assert process_reward([], ANALYSIS).reward == 0.0
    assert process_reward([], ANALYSIS).credited == (False, False, False)
    assert process_reward(ANALYSIS, []) == ProcessReward(0.0, (), (), (False, False, False))
    assert process_reward([], []).reward == 0.0


def test_hooks_of_the_episode_schema_and_capture_records_qualify() -> None:
    """Names come from name, else variable_name, else code_line (the builder's naming)."""
    gold = [
        hook_record("df = load()", {"rows": 3}, "df"),
        hook_record("df.isna().sum()", 0, depends_on=["df"]),
        hook_record("n = len(df)", 3, "n", depends_on=["df", "df.isna().sum()"]),
    ]
    assert process_reward(gold, gold).reward == 1.0
    assert process_reward([gold[0], gold[2]], gold).credited == (True, False, False)


def test_cycles_are_never_credited() -> None:
    cyclic = [gold_hook("a", 1, "b"), gold_hook("b", 2, "a"), gold_hook("c", 3)]
    assert process_reward(cyclic * 2, cyclic).credited == (False, False, True)


def test_a_dependency_naming_no_gold_hook_orders_nothing() -> None:
    """The preloaded ``df``, or a hook the capture lost with its failed cell: a student
    producing the gold values earns them all (the old rule credited such a hook never)."""
    preloaded = [gold_hook("a", 1, "df"), gold_hook("b", 2, "a")]
    assert process_reward(preloaded, preloaded).reward == 1.0
    lost = [gold_hook("m", 1, "ctrl"), gold_hook("n", 2, "m")]
    assert process_reward(lost, lost).credited == (True, True)
    # the dependency that does name a gold hook still orders: b before a earns b nothing
    assert process_reward(list(reversed(preloaded)), preloaded).credited == (True, False)


def test_student_names_and_edges_are_ignored_and_hashless_hooks_match_nothing() -> None:
    renamed = [{"name": "x", "value_hash": h["value_hash"], "depends_on": []} for h in ANALYSIS]
    assert process_reward(renamed, ANALYSIS).reward == 1.0
    assert process_reward([{"name": "df"}, {"value_hash": None}], ANALYSIS).reward == 0.0


# ---------------------------------------------------------------- process_reward: properties


@st.composite
def gold_dags(draw: st.DrawFn, min_size: int = 1) -> list[dict[str, Any]]:
    """Gold hooks in a topological order (each depends only on earlier ones), distinct hashes."""
    n = draw(st.integers(min_size, 9))
    hooks = []
    for i in range(n):
        deps = draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else set()
        hooks.append(gold_hook(f"h{i}", f"value {i}", *(f"h{d}" for d in sorted(deps))))
    return hooks


def descendants(gold: list[dict[str, Any]], name: str) -> set[str]:
    """``name`` and every hook that depends on it, directly or transitively."""
    out = {name}
    for hook in gold:  # topological order: one pass suffices
        if out & set(hook["depends_on"]):
            out.add(hook["name"])
    return out


@settings(max_examples=200)
@given(gold_dags())
def test_property_identical_trace_scores_one(gold) -> None:
    result = process_reward(gold, gold)
    assert result.reward == 1.0
    assert all(result.matched)
    assert result.credited_at == tuple(range(len(gold)))


@settings(max_examples=200)
@given(gold_dags(), st.randoms(use_true_random=False))
def test_property_any_topological_order_with_noise_scores_one(gold, rng) -> None:
    pending, student = list(gold), []
    while pending:
        done = {h.get("name") for h in student}
        ready = [h for h in pending if set(h["depends_on"]) <= done]
        pick = rng.choice(ready)
        pending.remove(pick)
        student.append(pick)
        if rng.random() < 0.3:
            student.append({"value_hash": value_hash(f"noise {rng.random()}")})
    assert process_reward(student, gold).reward == 1.0


@settings(max_examples=300)
@given(gold_dags(min_size=2), st.data())
def test_property_a_dependency_out_of_order_loses_exactly_its_dependents(gold, data) -> None:
    """Move one hook X to a position before one of its dependencies (the rest keep the gold
    order). X and every hook depending on it, directly or transitively, lose their credit;
    every other hook keeps it: reward = 1 - |{X} ∪ descendants(X)| / n."""
    movable = [i for i, h in enumerate(gold) if h["depends_on"]]
    assume(movable)
    x = data.draw(st.sampled_from(movable))
    rest = gold[:x] + gold[x + 1 :]
    # positions in ``rest`` at or before the last dependency of X: X precedes that one
    last_dep = max(i for i, h in enumerate(rest) if h["name"] in gold[x]["depends_on"])
    q = data.draw(st.integers(0, last_dep))
    student = [*rest[:q], gold[x], *rest[q:]]
    lost = descendants(gold, gold[x]["name"])
    result = process_reward(student, gold)
    assert result.credited == tuple(h["name"] not in lost for h in gold)
    assert result.reward == pytest.approx(1 - len(lost) / len(gold))


@settings(max_examples=100)
@given(st.integers(2, 12), st.data())
def test_property_in_a_chain_the_hooks_after_the_misplaced_one_lose_credit(n, data) -> None:
    """Chain h0 <- h1 <- ... : moving hook k (k >= 1) to the front keeps only h0..h(k-1)."""
    chain = [gold_hook("h0", 0)] + [gold_hook(f"h{i}", i, f"h{i - 1}") for i in range(1, n)]
    k = data.draw(st.integers(1, n - 1))
    student = [chain[k], *chain[:k], *chain[k + 1 :]]
    assert process_reward(student, chain).reward == pytest.approx(k / n)


@settings(max_examples=100)
@given(gold_dags(), st.lists(st.text(max_size=4), max_size=5))
def test_property_no_student_hooks_or_no_gold_scores_zero(gold, noise) -> None:
    assert process_reward([], gold).reward == 0.0
    assert process_reward([value_hash(t) for t in noise], []).reward == 0.0


@settings(max_examples=200)
@given(gold_dags(), st.data())
def test_property_reward_is_credited_share_and_in_unit_interval(gold, data) -> None:
    student = data.draw(st.lists(st.sampled_from(gold), max_size=12))
    result = process_reward(student, gold)
    assert 0.0 <= result.reward <= 1.0
    assert result.reward == pytest.approx(sum(result.credited) / len(gold) if student else 0.0)
    assert len(result.matched) == len(student)
    for i, at in enumerate(result.credited_at):
        if at is not None:
            assert student[at]["value_hash"] == gold[i]["value_hash"]
            assert result.matched[at]


# ---------------------------------------------------------------- adapters


def test_adapters_are_named_and_take_trainer_keywords() -> None:
    results = {"good": {"answer": 42.5, "hooks": ANALYSIS}, "silent": {"hooks": []}}
    outcome = make_outcome_reward(lambda c: results[c])
    process = make_process_reward(lambda c: results[c])
    assert (outcome.__name__, process.__name__) == ("outcome_reward", "process_reward")
    assert make_outcome_reward(lambda c: {}, name="answer_ok").__name__ == "answer_ok"
    columns = {
        "expected_final_answer_hash": [value_hash(42.5)] * 2,
        "gold_hooks": [ANALYSIS] * 2,
        "trainer_state": None,  # other trainer keywords are ignored
        "completion_ids": [[1], [2]],
    }
    kwargs = {"prompts": ["q", "q"], "completions": ["good", "silent"], **columns}
    assert outcome(**kwargs) == [1.0, 0.0]
    assert process(**kwargs) == [1.0, 0.0]
    with pytest.raises(KeyError, match="gold_hooks"):
        process(prompts=["q"], completions=["good"])
    with pytest.raises(ValueError, match="2 values"):
        outcome(prompts=["q"], completions=["good"], expected_final_answer_hash=["a", "b"])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A dataset folder built from synthetic episodes, and those episodes."""
    tmp = tmp_path_factory.mktemp("rewards")
    episodes = list(generate_episodes(16, 7))
    path = tmp / "episodes.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in episodes))
    config = BuildConfig(episodes=(str(path),), out=tmp / "dataset", rejects=tmp / "rejects.jsonl")
    build(config)
    return tmp / "dataset", episodes


def gold_trace_hooks(episode: dict[str, Any]) -> list[dict[str, Any]]:
    gold = episode["teacher_gold_trace"]
    return [h for t in gold.get("turns") or [] for h in t["execution"]["hooks"]] or gold["hooks"]


def test_adapters_on_rl_rows_loaded_with_load_dataset(built) -> None:
    folder, episodes = built
    splits = datasets.load_dataset(str(folder), "rl")
    rows = [row for split in splits.values() for row in split]
    assert rows
    by_id = {e["episode_id"]: e for e in episodes}

    def run(completion: list[dict[str, str]]) -> dict[str, Any]:
        """A stand-in environment: the completion names an episode and a behaviour."""
        episode_id, behaviour = completion[0]["content"].split("|")
        expected = next(r for r in rows if r["episode_id"] == episode_id)
        hooks = gold_trace_hooks(by_id[episode_id])  # as the capture wrote them
        if behaviour == "gold":
            return {"answer": json.loads(expected["expected_final_answer"]), "hooks": hooks}
        if behaviour == "reversed":
            return {"answer": "wrong", "hooks": hooks[::-1]}
        return {}  # crashed: nothing submitted, no hooks

    behaviours = ["gold", "reversed", "crashed"]
    # GRPOTrainer repeats each row's columns once per generation
    batch = [(row, b) for row in rows for b in behaviours]
    columns = {k: [row[k] for row, _ in batch] for k in rows[0] if k != "prompt"}
    kwargs = {
        "prompts": [row["prompt"] for row, _ in batch],
        "completions": [
            [{"role": "assistant", "content": f"{r['episode_id']}|{b}"}] for r, b in batch
        ],
        **columns,
    }
    assert {row["answer_tolerance"] for row in rows} == {None}  # built without one
    outcome = make_outcome_reward(run)(**kwargs)
    process = make_process_reward(run)(**kwargs)
    assert len(outcome) == len(process) == len(batch)
    for (row, behaviour), got_outcome, got_process in zip(batch, outcome, process, strict=True):
        gold = row["gold_hooks"]
        reference = process_reward(gold_trace_hooks(by_id[row["episode_id"]])[::-1], gold)
        if behaviour == "gold":
            assert got_outcome == 1.0
            assert got_process == (1.0 if gold else 0.0)
        elif behaviour == "reversed":
            assert got_outcome == 0.0
            assert got_process == reference.reward
        else:
            assert (got_outcome, got_process) == (0.0, 0.0)
    # the data has dependencies, so reversing the order must cost credit somewhere
    assert any(
        p < 1.0
        for (row, b), p in zip(batch, process, strict=True)
        if b == "reversed" and row["gold_hooks"]
    )


def test_a_run_that_takes_csv_source_gets_the_rows_data_file() -> None:
    """The ``rl`` rows name the data file the completion's code runs against: a ``run`` with
    a ``csv_source`` argument receives it; a ``run(completion)`` works as before."""
    seen: list[tuple[str, str | None]] = []

    def run_with_data(completion: str, csv_source: str | None = None) -> dict[str, Any]:
        seen.append((completion, csv_source))
        return {"answer": 42, "hooks": []}

    def run_alone(completion: str) -> dict[str, Any]:
        return {"answer": 42}

    rows = {
        "accepted_answer_hashes": [[value_hash(42)], [value_hash(7)]],
        "gold_hooks": [[], []],
        "csv_source": ["data/titanic.csv", None],
    }
    outcome = make_outcome_reward(run_with_data)
    assert outcome(None, ["a", "b"], **rows) == [1.0, 0.0]
    assert seen == [("a", "data/titanic.csv"), ("b", None)]
    make_process_reward(run_with_data)(None, ["c", "d"], **rows)
    assert seen[2:] == [("c", "data/titanic.csv"), ("d", None)]
    assert make_outcome_reward(run_alone)(None, ["a", "b"], **rows) == [1.0, 0.0]
    without = {k: v for k, v in rows.items() if k != "csv_source"}  # a build before the column
    assert make_outcome_reward(run_with_data)(None, ["e", "f"], **without) == [1.0, 0.0]
