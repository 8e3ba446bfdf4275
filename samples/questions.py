"""Question-bank lines: synthetic questions (with ground truth, from the problem pool) and
LLM-written ones. As the capture side's banks do, every question names its ``dataset`` (the
CSV's name without ``.csv``) and a synthetic one its ``template_name``."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from builder.contract.hashing import question_id
from samples.problems import Problem, make_problem, pool_problem


def generate_questions(n: int, seed: int = 0, kind: str = "synthetic") -> Iterator[dict]:
    """``n`` question-bank records with distinct ids. ``synthetic`` ones are the leading
    questions of the episode pool of the same seed (so they meet those episodes' questions)
    with their ground truth; ``llm`` ones are phrased differently and carry none."""
    if kind not in ("synthetic", "llm"):
        raise ValueError(f"kind must be 'synthetic' or 'llm', not {kind!r}")
    seen: set[str] = set()
    index = 0
    while len(seen) < n:
        # Pool entries can repeat a question (same text and hint); a bank lists it once.
        if kind == "synthetic":
            record = _synthetic_question(pool_problem(seed, index))
        else:
            record = _llm_question(random.Random(f"llm:{seed}:{index}"))
        index += 1
        if record["id"] not in seen:
            seen.add(record["id"])
            yield record


def _synthetic_question(problem: Problem) -> dict[str, Any]:
    record = problem.question()
    record["ground_truth"] = problem.answer
    record["ground_truth_hash"] = problem.answer_hash
    record["dataset"] = problem.dataset.stem
    record["template_name"] = problem.template
    return record


def _llm_question(rng: random.Random) -> dict[str, Any]:
    problem = make_problem(rng)
    text = f"Using the {problem.dataset.file} dataset, {problem.text[0].lower()}{problem.text[1:]}"
    hint = problem.hint if rng.random() < 0.4 else None
    return {
        "id": question_id(text, hint),
        "question_text": text,
        "hint": hint,
        "difficulty": problem.difficulty if rng.random() < 0.8 else None,
        "n_steps": problem.n_steps if rng.random() < 0.7 else None,
        "created_at": problem.created_at,
        "dataset": problem.dataset.stem,  # LLM-written: a dataset, no template
    }
