"""Hand-written episodes for the derive tests, built through the real validate + normalize path.

Builders take the parts that matter to a test and fill in consistent hashes
(``builder.contract.hashing``), so an episode is clean unless a test breaks it on purpose.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import orjson
import polars as pl
import pytest

from builder.contract.hashing import question_id, value_hash
from builder.derive import derive_all
from builder.normalize import Normalizer
from builder.sources.inputs import SourceLine
from builder.validate.validator import Valid, Validator
from schemas.episode import Episode

MISSING = object()


def hook(code_line: str, value: Any, name: str | None = None, **extra: Any) -> dict[str, Any]:
    out = {"code_line": code_line, "variable_name": name, "value_hash": value_hash(value)}
    return out | {"value": value} | extra


def turn(
    index: int,
    code: str,
    success: bool = True,
    stdout: str = "",
    stderr: str = "",
    hooks: Iterable[dict[str, Any]] = (),
    reasoning: str | None = None,
    correction: dict[str, Any] | None = None,
    submitted: Any = MISSING,
) -> dict[str, Any]:
    execution = {"success": success, "stdout": stdout, "stderr": stderr, "hooks": list(hooks)}
    if submitted is not MISSING:
        execution["submitted_answer"] = submitted
    out = {"turn_index": index, "code": code, "reasoning": reasoning, "execution": execution}
    return out | ({"correction": correction} if correction else {})


def correction(corrects: int, error_type: str, removed: list[str], added: list[str]) -> dict:
    diff = {"removed_lines": removed, "added_lines": added}
    return {
        "corrects_turn": corrects,
        "error_type": error_type,
        "error_message": f"{error_type}: boom",
        "code_diff": diff,
    }


def trace(
    answer: Any = MISSING,
    success: bool = True,
    turns: list[dict[str, Any]] | None = None,
    cells: Iterable[str] = (),
    hooks: Iterable[dict[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "execution_success": success,
        "code_cells": list(cells),
        "hooks": list(hooks),
    }
    if turns is not None:
        out["turns"] = turns
        out["code_cells"] = [t["code"] for t in turns]
    if answer is not MISSING:
        out |= {"final_answer": answer, "final_answer_hash": value_hash(answer)}
    return out


def episode(
    episode_id: str,
    text: str,
    gold: dict[str, Any],
    consistency: list[dict[str, Any]],
    verified: bool = True,
    expected: Any = MISSING,
    difficulty: str | None = "MEDIUM",
    conversation: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    question = {"id": question_id(text, None), "question_text": text, "difficulty": difficulty}
    out = {
        "episode_id": episode_id,
        "verified": verified,
        "question": question,
        "teacher_gold_trace": gold,
        "consistency_traces": consistency,
    }
    if expected is not MISSING:
        out["rl_verification_data"] = {
            "expected_final_answer": expected,
            "expected_final_answer_hash": value_hash(expected),
        }
    if conversation is not None:
        out["conversation_for_sft"] = conversation
    return out | extra


def build_tables(
    episodes: Iterable[Mapping[str, Any]], answer_tolerance: float | None = None
) -> dict[str, pl.LazyFrame]:
    validator = Validator(Episode, "episode_id")
    normalizer = Normalizer(answer_tolerance=answer_tolerance)
    for number, record in enumerate(episodes, start=1):
        valid = validator.validate(SourceLine("test.jsonl", number, orjson.dumps(record)))
        assert isinstance(valid, Valid), str(valid)
        normalizer.episode(valid)
    return {name: pl.from_arrow(t).lazy() for name, t in normalizer.take_tables().items()}


# ---------------------------------------------------------------- the hand-written sample

LOAD = "df = pd.read_csv('sales.csv')"
BAD = "m = df['revenu'].mean()"
GOOD = "m = df['revenue'].mean()"
SUBMIT = "submit(round(m, 2))"


def analysis_episode() -> dict[str, Any]:
    """ep-a: verified; gold has a failed turn fixed by a correction; c0 right answer with a
    wrong hook and a failed turn; c1 flat, wrong answer; c2 flat, failed without answer."""
    shape = {"shape": [3, 2]}
    gold = trace(
        42.5,
        turns=[
            turn(0, LOAD, stdout="ok", hooks=[hook(LOAD, shape, "df")], reasoning="Load the data."),
            turn(1, BAD, success=False, stderr="KeyError: 'revenu'"),
            turn(
                2,
                GOOD,
                stdout="42.5",
                hooks=[hook(GOOD, 42.5, "m", depends_on=["df"])],
                correction=correction(1, "KeyError", [BAD], [GOOD]),
                reasoning="Fix the column.",
            ),
            turn(3, SUBMIT, submitted=42.5),
        ],
    )
    c0 = trace(
        42.5,
        turns=[
            turn(0, LOAD, hooks=[hook(LOAD, {"shape": [9, 9]}, "df")]),
            turn(1, BAD, success=False, stderr="KeyError: 'revenu'"),
            turn(
                2,
                GOOD,
                hooks=[hook(GOOD, 42.5, "m")],
                correction=correction(1, "KeyError", [BAD], [GOOD]),
            ),
            turn(3, SUBMIT, submitted=42.5),
        ],
    )
    c1 = trace(
        41.0,
        cells=[LOAD, "m = df['revenue'].median()", SUBMIT],
        hooks=[hook(LOAD, shape, "df"), hook("m = df['revenue'].median()", 41.0, "m")],
    )
    c2 = trace(success=False, cells=[LOAD, BAD])
    return episode(
        "ep-a", "What is the mean revenue?", gold, [c0, c1, c2], expected=42.5, difficulty="HARD"
    )


def conversation_episode() -> dict[str, Any]:
    """ep-b: verified, flat gold, with conversation_for_sft (one message in parts form)."""
    gold = trace(3, cells=["n = len(df)", "submit(n)"], hooks=[hook("n = len(df)", 3, "n")])
    conversation = {
        "system_prompt": "Be brief.",
        "messages": [
            {"role": "user", "content": "How many rows?"},
            {"role": "assistant", "content": "```python\nn = len(df)\n```"},
            {"role": "user", "content": [{"type": "text", "text": "[stdout]:\n3"}]},
            {"role": "assistant", "content": "```python\nsubmit(n)\n```"},
        ],
    }
    return episode(
        "ep-b",
        "How many rows?",
        gold,
        [trace(3, cells=["submit(3)"])],
        difficulty="EASY",
        conversation=conversation,
    )


def unverified_episode() -> dict[str, Any]:
    """ep-c: captured unverified and indeed not verifiable (gold disagrees with consensus)."""
    gold = trace(
        1,
        turns=[turn(0, "x = 1", hooks=[hook("x = 1", 1, "x")]), turn(1, "submit(x)", submitted=1)],
    )
    return episode("ep-c", "Pick one.", gold, [trace(2, cells=["submit(2)"])], verified=False)


def mismatch_episode() -> dict[str, Any]:
    """ep-d: claims verified, but no consistency trace agrees with the gold answer."""
    gold = trace(
        5, cells=["y = 5", "submit(y)"], hooks=[hook("y = 5", 5, "y"), hook("z = y", 5, "z")]
    )
    return episode("ep-d", "Pick five.", gold, [trace(6, cells=["submit(6)"])])


def checked_episode() -> dict[str, Any]:
    """ep-e: verified and recomputes, but its triangulation metadata is wrong."""
    gold = trace(7, cells=["w = 7"], hooks=[hook("w = 7", 7, "w")])
    meta = {
        "n_consistency_runs": 9,
        "n_consistency_succeeded": 1,
        "majority_count": 1,
        "majority_answer_hash": value_hash(7),
        "gold_matches_majority": True,
    }
    return episode(
        "ep-e", "Pick seven.", gold, [trace(7, cells=["submit(7)"])], triangulation_metadata=meta
    )


def expected_counts(tables: Mapping[str, pl.LazyFrame], cap: int) -> dict[str, int]:
    """Row counts every objective must have, computed straight from the tables."""
    eligible = tables["episodes"].filter(
        pl.col("verified") & pl.col("verified_recomputed") & (pl.col("checks").list.len() == 0)
    )
    traces = tables["traces"].join(eligible, on="episode_id", how="semi")
    expected = eligible.select("episode_id", "expected_final_answer_hash")
    good = pl.col("execution_success") & (
        pl.col("final_answer_hash") == pl.col("expected_final_answer_hash")
    ).fill_null(False)
    pairs = (
        traces.join(expected, on="episode_id")
        .group_by("episode_id")
        .agg(
            chosen=good.sum(),
            failed=((pl.col("role") == "consistency") & ~good).sum(),
        )
        .select(pl.min_horizontal(pl.col("chosen") * pl.col("failed"), pl.lit(cap)).sum())
    )
    # prm: every episode without a failed check but verified_mismatch, verified or not
    # (the fixtures repeat no turn index)
    sound = tables["episodes"].filter(
        pl.col("checks").list.set_difference(pl.lit(["verified_mismatch"])).list.len() == 0
    )
    gold_hooks = (
        tables["hooks"]
        .join(tables["traces"].filter(pl.col("role") == "gold"), on="trace_id", how="semi")
        .join(sound, on="episode_id", how="semi")
    )

    def rows(frame: pl.LazyFrame) -> int:
        return int(frame.select(pl.len()).collect().item())

    # sft_turns: one row per weight-1 assistant message. Captured conversations train every
    # assistant message; rendered gold traces every turn but the failed ones a later turn fixes.
    captured = tables["messages"].join(eligible, on="episode_id", how="semi")
    rendered = eligible.join(captured, on="episode_id", how="anti")
    gold_turns = tables["turns"].join(
        tables["traces"]
        .filter(pl.col("role") == "gold")
        .join(rendered, on="episode_id", how="semi"),
        on="trace_id",
        how="semi",
    )
    fixed = (
        gold_turns.filter(~pl.col("success"))
        .join(tables["corrections"], on="trace_id", suffix="_fix")
        .filter(
            (pl.col("turn_index") >= pl.col("corrects_turn"))
            & (pl.col("turn_index") < pl.col("turn_index_fix"))
        )
        .select("trace_id", "turn_index")
        .unique()
    )
    # a flat gold trace's cells are one assistant message
    flat = tables["traces"].filter(pl.col("form") == "flat").select("trace_id")
    turned = gold_turns.join(flat, on="trace_id", how="anti")
    flat_gold = gold_turns.join(flat, on="trace_id", how="semi").select("trace_id").unique()
    # a captured assistant message whose code block is a gold turn fixed later is context
    gold_of_captured = (
        tables["traces"]
        .filter(pl.col("role") == "gold")
        .join(captured.select("episode_id").unique(), on="episode_id", how="semi")
        .select("trace_id", "episode_id")
    )
    fixed_in_captured = (
        tables["turns"]
        .join(gold_of_captured, on="trace_id")
        .filter(~pl.col("success"))
        .join(tables["corrections"], on="trace_id", suffix="_fix")
        .filter(
            (pl.col("turn_index") >= pl.col("corrects_turn"))
            & (pl.col("turn_index") < pl.col("turn_index_fix"))
        )
    )
    failed_codes = {
        (r["episode_id"], r["code"].strip())
        for r in fixed_in_captured.collect().iter_rows(named=True)
    }
    said = captured.filter(pl.col("role") == "assistant").collect()

    def codes(message: dict[str, Any]) -> list[str]:
        """Its fenced blocks and the ``code`` argument of its tool calls."""
        blocks = re.findall(r"```[^\n]*\n(.*?)\n```", message["content"] or "", re.S)
        calls = orjson.loads(message["tool_calls"] or "[]")
        arguments = [orjson.loads(c["function"]["arguments"]) for c in calls]
        return blocks + [a["code"] for a in arguments if "code" in a]

    # ... and, where the gold trace is flat (no success per cell), one whose feedback (the
    # next message, tool or user) shows an error
    following = {}
    flat_episodes = (
        tables["traces"]
        .filter((pl.col("role") == "gold") & (pl.col("form") == "flat"))
        .select("episode_id")
    )
    messages = (
        captured.join(flat_episodes, on="episode_id", how="semi")
        .sort("episode_id", "message_index")
        .collect()
        .to_dicts()
    )
    for here, after in itertools.pairwise(messages):
        if here["episode_id"] == after["episode_id"] and after["role"] in ("tool", "user"):
            text = after["content"] or " ".join(
                part.get("text", "") for part in orjson.loads(after["content_parts"] or "[]")
            )
            following[(here["episode_id"], here["message_index"])] = text

    def shows_error(text: str) -> bool:
        last = text.rstrip().rsplit("\n", 1)[-1]
        error = re.fullmatch(r"(?:[A-Za-z_][\w.]*)?(?:Error|Exception)(?::[ \t]*.*)?", last)
        return "Traceback (most recent call last)" in text or error is not None

    attempts = sum(
        any((r["episode_id"], code.strip()) in failed_codes for code in codes(r))
        or shows_error(following.get((r["episode_id"], r["message_index"]), ""))
        for r in said.iter_rows(named=True)
    )
    trained = (
        rows(captured.filter(pl.col("role") == "assistant"))
        - attempts
        + rows(turned)
        + rows(flat_gold)
        - rows(fixed)
    )
    return {
        "sft": rows(eligible),
        "sft_turns": trained,
        "rl": rows(eligible),
        "prm": rows(gold_hooks),
        "prm_stepwise": rows(traces.filter(pl.col("n_turns") > 0)),
        "orm": rows(traces),
        "dpo": int(pairs.collect().item() or 0),
        "self_correction": rows(tables["corrections"].join(traces, on="trace_id", how="semi")),
    }


BUILDERS = SimpleNamespace(
    hook=hook,
    turn=turn,
    correction=correction,
    trace=trace,
    episode=episode,
    build_tables=build_tables,
    expected_counts=expected_counts,
    analysis_episode=analysis_episode,
    LOAD=LOAD,
    BAD=BAD,
    GOOD=GOOD,
    SUBMIT=SUBMIT,
)


@pytest.fixture(scope="session")
def make() -> SimpleNamespace:
    """The episode builders and helpers of this module (test files cannot import conftest)."""
    return BUILDERS


@pytest.fixture(scope="session")
def sample() -> list[dict[str, Any]]:
    return [
        analysis_episode(),
        conversation_episode(),
        unverified_episode(),
        mismatch_episode(),
        checked_episode(),
    ]


@pytest.fixture(scope="session")
def tables(sample: list[dict[str, Any]]) -> dict[str, pl.LazyFrame]:
    return build_tables(sample)


@pytest.fixture(scope="session")
def derived(tables: dict[str, pl.LazyFrame]) -> dict[str, pl.DataFrame]:
    """Every objective of the sample, collected, default options."""
    return {name: frame.collect() for name, frame in derive_all(tables).items()}
