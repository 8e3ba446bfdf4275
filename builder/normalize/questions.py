"""A ``questions`` row, from a question bank's line or an episode's question."""

from __future__ import annotations

from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from builder.contract.hashing import canonical_json, normalize_question_text
from builder.normalize import checks
from builder.normalize.extras import extra_fields
from builder.normalize.rows import QuestionRow
from builder.normalize.values import json_text, utc
from schemas import vocabulary
from schemas.episode import canonical_difficulty


def question_key(question: Any) -> str:
    """The id a question has in every table: its content address ``sha256(text|hint)[:16]``,
    which is its ``id`` whenever that id is right. A captured id that is not (a producer's
    slip) fails ``question_id_mismatch`` on its episode, but never claims the row, the
    prompt or the split of the question it happens to name."""
    return checks.content_id(question.question_text, question.hint)


@lru_cache(maxsize=1 << 14)
def _normalized(question_text: str) -> str:
    """``normalize_question_text``, remembered, as its question is asked by several episodes."""
    return normalize_question_text(question_text)


# The file a bank of one dataset is written as, in a folder named after the dataset
BANK_DOCUMENT = "questions.json"


def bank_dataset(file: str, source: str) -> str | None:
    """The dataset a bank's folder names (the capture side writes one
    ``<dataset>/questions.json`` per CSV), for records that do not say it themselves."""
    if source == "episode":
        return None
    path = PurePosixPath(file.replace("\\", "/"))
    return path.parent.name or None if path.name == BANK_DOCUMENT else None


def _bank_extras(question: Any, source: str) -> str | None:
    """A bank record's unknown fields (the capture side's reference ``code``, its
    ``dataset_description``, ...), kept as ``episodes.extra_fields`` keeps an episode's."""
    if source == "episode" or not getattr(question, "model_extra", None):
        return None
    return canonical_json(dict(extra_fields(question)))


def question_row(
    question: Any,
    source: str,
    file: str,
    line: int,
    precision: int | None = None,
    checked: list[str] | None = None,
) -> tuple[Any, ...]:
    """A ``questions`` row; its integrity checks (pure) are the last column. The row is the
    question's under its content address (``question_key``), so a wrong captured id is its
    episode's failed check, not the row's. ``checked``: ``checks.check_question`` of it, when
    the caller has it already."""
    id_mismatch = vocabulary.QUESTION_ID_MISMATCH
    if checked is None:
        checked = checks.check_question(question, precision)
    failed = [c for c in checked if c != id_mismatch]
    return QuestionRow(
        question_id=question_key(question),
        question_text=question.question_text,
        normalized_text=_normalized(question.question_text),
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
        dataset=question.dataset or bank_dataset(file, source),
        output_type=question.output_type,
        output_schema=json_text(question, "output_schema"),
        extra_fields=_bank_extras(question, source),
        source_file=file,
        source_line=line,
        checks=failed,
    )
