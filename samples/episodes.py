"""Episodes: a question, the gold trace run with the hint, consistency runs without it
(mostly agreeing, sometimes converging on one shared mistake), the SFT conversation (plain
or as OpenAI tool calls), RL verification data and triangulation metadata, computed the way
``builder.checks`` recomputes them, so a clean build of generated episodes has no
integrity-check failures."""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import orjson

from samples.problems import Problem, make_problem, pool_problem
from samples.steps import EPOCH, iso
from samples.traces import Outcome, Turn, run_turns, trace_record

SYSTEM_PROMPT = (
    "You are a data analyst with a pandas sandbox. Answer with code, one cell per turn; "
    "call submit(answer) with the final answer."
)


def _outcomes(problem: Problem, rng: random.Random) -> list[Outcome]:
    """Consistency runs: mostly agreeing, sometimes converging on one shared mistake (the
    case that makes an episode unverified), sometimes mostly crashing."""
    wrong = problem.wrong
    roll = rng.random()
    shared = rng.choice(wrong) if wrong else None
    outcomes = []
    for _ in range(rng.choice((3, 3, 3, 3, 3, 3, 3, 4, 4, 5))):
        r = rng.random()
        if roll < 0.7 or shared is None:
            kind = "correct" if r < 0.82 else "wrong" if r < 0.91 and wrong else "failed"
            variant = rng.choice(wrong) if kind == "wrong" else None
        elif roll < 0.9:
            kind = "wrong" if r < 0.6 else "correct" if r < 0.85 else "failed"
            variant = shared if kind == "wrong" else None
        else:
            kind, variant = ("failed", None) if r < 0.7 else ("correct", None)
        outcomes.append(Outcome(kind, variant))
    return outcomes


def triangulate(gold: dict[str, Any], runs: list[dict[str, Any]]) -> tuple[bool, dict[str, Any]]:
    """``verified`` and ``triangulation_metadata`` as ``builder.checks`` recomputes them.
    On a tie the gold answer's hash is named the majority when it is among the tied."""
    counts = Counter(t["final_answer_hash"] for t in runs if t["final_answer_hash"] is not None)
    top = max(counts.values(), default=0)
    tied = [h for h, c in counts.items() if c == top]
    gold_hash = gold["final_answer_hash"]
    majority = gold_hash if gold_hash in tied else (tied[0] if tied else None)
    verified = bool(gold["execution_success"] and gold_hash is not None and gold_hash in tied)
    meta = {
        "n_consistency_runs": len(runs),
        "n_consistency_succeeded": sum(t["execution_success"] for t in runs),
        "majority_answer_hash": majority,
        "majority_count": top,
        "gold_matches_majority": gold_hash is not None and gold_hash == majority,
    }
    return verified, meta


TOOL_SHARE = 5  # one conversation in five is captured as OpenAI tool calls


def _conversation(problem: Problem, turns: list[Turn], tools: bool = False) -> dict[str, Any]:
    """The SFT conversation; with ``tools``, each code cell is an OpenAI ``run_python`` tool
    call (arguments as JSON text) answered by a ``tool`` message, as tool-calling agents
    capture it."""
    ask = f"Dataset: {problem.dataset.file}\n\n{problem.text}"
    if problem.hint:
        ask += f"\n\nHint: {problem.hint}"
    messages: list[dict[str, Any]] = [{"role": "user", "content": ask}]
    for i, t in enumerate(turns):
        if tools:
            call = {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "run_python", "arguments": json.dumps({"code": t.code})},
            }
            messages.append({"role": "assistant", "content": t.reasoning, "tool_calls": [call]})
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": "run_python",
                    "content": _feedback(t.stdout, t.stderr),
                }
            )
            continue
        messages.append(
            {"role": "assistant", "content": f"{t.reasoning}\n```python\n{t.code}\n```"}
        )
        messages.append({"role": "user", "content": _feedback(t.stdout, t.stderr)})
    return {"system_prompt": SYSTEM_PROMPT, "messages": messages}


def _feedback(stdout: str, stderr: str) -> str:
    """What the model was shown after a turn: its output, and its error when it failed."""
    return f"[stdout]:\n{stdout}" + (f"\n[stderr]:\n{stderr}" if stderr else "")


def _episode(
    rng: random.Random, index: int, problem: Problem, form: str | None, day: int = 0
) -> dict[str, Any]:
    forced = form is not None
    form = form or ("turns" if rng.random() < 0.5 else "flat")
    gold_outcome = Outcome("failed" if rng.random() < 0.05 else "correct")
    gold_turns = run_turns(problem, gold_outcome, rng, fix_rate=0.3)
    gold = trace_record(gold_turns, form, rng, described=True, extras=False)
    # Turn-form episodes may hold consistency runs from an older, flat capture.
    run_form = "flat" if not forced and form == "turns" and rng.random() < 0.65 else form
    runs = []
    for outcome in _outcomes(problem, rng):
        turns = run_turns(problem, outcome, rng, fix_rate=0.2)
        runs.append(trace_record(turns, run_form, rng, described=False, extras=rng.random() < 0.03))
    verified, meta = triangulate(gold, runs)
    moment = EPOCH + timedelta(
        days=day, seconds=index * 53 + rng.randrange(53), microseconds=rng.randrange(10**6)
    )
    question = problem.question()
    if rng.random() < 0.08:  # some captures embed the synthetic question's known answer
        question["ground_truth"] = problem.answer
        question["ground_truth_hash"] = problem.answer_hash
    episode: dict[str, Any] = {
        "episode_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "timestamp": iso(moment),
        "verified": verified,
        "question": question,
        "teacher_gold_trace": gold,
        "consistency_traces": runs,
    }
    if rng.random() < 0.85:
        # Chosen by the episode id, not the generator's random stream, so every other
        # generated value stays as it was.
        tools = int(episode["episode_id"][:8], 16) % TOOL_SHARE == 0
        episode["conversation_for_sft"] = _conversation(problem, gold_turns, tools)
    if gold["final_answer_hash"] is not None:
        episode["rl_verification_data"] = {
            "expected_final_answer_hash": gold["final_answer_hash"],
            "expected_final_answer": gold["final_answer"],
        }
    episode["triangulation_metadata"] = meta
    if rng.random() < 0.04:
        episode["capture_host"] = f"gpu-node-{rng.randint(1, 24):02d}"
    if form == "turns" and rng.random() < 0.04:
        gold["turns"][0]["latency_ms"] = rng.randint(300, 9000)
    return episode


def _detached(record: dict[str, Any]) -> dict[str, Any]:
    # Cached problems share hook values between episodes; callers get their own copy.
    return orjson.loads(orjson.dumps(record))


def generate_episode(rng: random.Random, index: int, *, form: str | None = None) -> dict:
    """One episode on a fresh question; ``form`` forces ``"flat"`` or ``"turns"`` traces."""
    if form not in (None, "flat", "turns"):
        raise ValueError(f"form must be 'flat', 'turns' or None, not {form!r}")
    return _detached(_episode(rng, index, make_problem(rng), form))


def episode_on(
    problem: Problem, rng: random.Random, index: int, *, form: str | None = None, day: int = 0
) -> dict:
    """One episode on ``problem`` (a question the caller chose, paraphrases included)."""
    return _detached(_episode(rng, index, problem, form, day))


def iter_episodes(n: int, seed: int, question_pool: int | None) -> Iterator[dict[str, Any]]:
    pool = question_pool or max(1, n // 2)
    rng = random.Random(f"episodes:{seed}")
    for i in range(n):
        problem = pool_problem(seed, rng.randrange(pool))
        yield _episode(rng, i, problem, None, day=seed % 97)


def generate_episodes(n: int, seed: int = 0, *, question_pool: int | None = None) -> Iterator[dict]:
    """``n`` episodes on questions drawn from a pool of ``question_pool`` (default ``n // 2``)
    questions, so several episodes share a question; streamed, never held in memory."""
    for episode in iter_episodes(n, seed, question_pool):
        yield _detached(episode)
