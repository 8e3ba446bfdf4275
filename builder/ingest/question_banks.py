"""Question banks as the ingest reads them: a question id seen in several banks, and the
line-by-line validation of a bank (blanks counted, rejects recorded)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from builder.ingest.rejects import RejectsWriter
from builder.ingest.results import FileCounts
from builder.normalize.explain import explain_question
from builder.sources.inputs import SourceLine
from builder.validate.json_lines import is_blank
from builder.validate.reject import FieldError, Reject
from builder.validate.validator import Valid, Validator
from schemas.episode import Question
from schemas.vocabulary import CHECK_FAILED, DUPLICATE_ID


def question_check_failed(
    valid: Valid[Question], failed: list[str], precision: int | None
) -> Reject:
    """The ``check_failed`` reject of a bank's question, each failed check placed."""
    errors = explain_question(valid.record, failed, precision)
    return Reject(valid.line.path, valid.line.number, CHECK_FAILED, errors, valid.line.raw)


class BankQuestions:
    """Question ids across the banks of a run. Within a bank a repeated id is a duplicate_id
    reject (its ``validator``); in a later bank the same question again is no reject (the
    first kept), but the id with other content (another ground truth, say) is one, naming
    the first: dropped without a word, it would hide which of the two is right."""

    def __init__(self, precision: int | None = None) -> None:
        self.first: dict[str, tuple[str, int, str]] = {}  # id -> path, line, content
        self.precision = precision  # the hash scheme a reject's suggested hash is of

    def validator(self) -> Validator[Question]:
        return _AcrossBanks(Question, "id", precision=self.precision, across=self)

    def conflict(self, valid: Valid[Question]) -> Reject | None:
        record, line = valid.record, valid.line
        content = record.model_dump_json(exclude={"capture_id"})
        path, number, seen = self.first.setdefault(record.id, (line.path, line.number, content))
        if path == line.path or seen == content:
            return None
        said = f"{record.id!r} already seen at {path}:{number}, with other content"
        return Reject(line.path, line.number, DUPLICATE_ID, (FieldError("$.id", said),), line.raw)


@dataclass
class _AcrossBanks(Validator[Question]):
    across: BankQuestions | None = None

    def validate(self, line: SourceLine) -> Valid[Question] | Reject:
        outcome = super().validate(line)
        if isinstance(outcome, Valid) and self.across is not None:
            return self.across.conflict(outcome) or outcome
        return outcome


def valid_records(
    lines: Iterable[SourceLine],
    validator: Validator[Any],
    counts: FileCounts,
    rejects: RejectsWriter,
) -> Iterator[Valid[Any]]:
    """Validate line by line with pydantic: blanks counted, rejects recorded, the rest
    yielded. Every line lands in exactly one of the three counts."""
    for line in lines:
        if is_blank(line):
            counts.blank += 1
            continue
        outcome = validator.validate(line)
        if isinstance(outcome, Valid):
            counts.valid += 1
            yield outcome
        else:
            counts.rejected += 1
            rejects.add(outcome)
