"""A ``questions`` row, from a question bank's line or an episode's question."""

from __future__ import annotations

from typing import Any

from builder import checks
from builder.hashing import normalize_question_text
from builder.normalize.rows import QuestionRow
from builder.normalize.values import json_text, utc
from schemas.episode import canonical_difficulty


def question_row(
    question: Any, source: str, file: str, line: int, precision: int | None = None
) -> tuple[Any, ...]:
    """A ``questions`` row; its integrity checks (pure) are the last column."""
    return QuestionRow(
        question_id=question.id,
        question_text=question.question_text,
        normalized_text=normalize_question_text(question.question_text),
        hint=question.hint,
        difficulty=canonical_difficulty(question.difficulty),
        n_steps=question.n_steps,
        created_at=utc(question.created_at),
        source=source,
        ground_truth=json_text(question, "ground_truth"),
        ground_truth_hash=question.ground_truth_hash,
        ground_truth_hashes=question.ground_truth_hashes,
        capture_id=question.capture_id,
        category=question.category,
        tags=question.tags,
        template_name=question.template_name,
        template_params=json_text(question, "template_params"),
        output_type=question.output_type,
        output_schema=json_text(question, "output_schema"),
        source_file=file,
        source_line=line,
        checks=checks.check_question(question, precision),
    )
