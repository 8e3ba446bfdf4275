"""Validate stage: one input line becomes a model instance, a blank, or a reject.

Parsing is RFC 8259 JSON (orjson, UTF-8 only) plus the one extension Python's ``json``
writes by default, and so the capture code does: the bare tokens ``NaN``, ``Infinity`` and
``-Infinity`` (read by the stdlib, only for lines orjson refuses that hold them). Then the
pydantic models of ``schemas``. A reject keeps the raw line unchanged plus where it came
from and why, so nothing is lost and every error can be found: ``data/x.jsonl:17 schema
$.teacher_gold_trace.hooks[3].value_hash: String should match pattern ...``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from builder.contract.hashing import question_id
from builder.sources.banks import bank_path, with_model_keys
from builder.sources.documents import named_jsonl
from builder.sources.inputs import SourceLine
from builder.validate.json_lines import LineJSON, parse_line
from builder.validate.reject import FieldError, Reject
from builder.validate.teach import teach
from schemas.episode import Episode, Question
from schemas.layouts import SEEDS, NoLayout, layout_path, recognise
from schemas.vocabulary import SCHEMA

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Valid(Generic[ModelT]):
    line: SourceLine
    record: ModelT
    layout: str = SEEDS.name  # the episode layout the line was written in


def json_path(loc: Iterable[int | str]) -> str:
    """``('hooks', 3, 'value_hash')`` -> ``$.hooks[3].value_hash``; union tags are dropped."""
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _is_union_tag(part):
            out += f".{part}"
    return out


def _is_union_tag(part: str) -> bool:
    # pydantic names the union member it tried, e.g. 'str' or 'list[dict[str,any]]'.
    return any(c in part for c in "[]") or part in {"str", "int", "bool", "float", "none"}


def schema_errors(exc: ValidationError) -> tuple[FieldError, ...]:
    seen: dict[str, FieldError] = {}
    for err in exc.errors(include_url=False):
        path = json_path(err["loc"])
        message = err["msg"]
        if err["type"] == "value_error":  # our validators' own words, without pydantic's tag
            message = message.removeprefix("Value error, ")
        elif err["type"] not in ("missing", "extra_forbidden"):
            message += f", got {_shown(err.get('input'))}"
        seen.setdefault(path, FieldError(path, message))
    return tuple(seen.values())


SHOWN_CHARS = 60


def _shown(value: Any) -> str:
    """The offending value as the line spells it (JSON), cut short; containers by kind."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


_NO_ADDRESS = "0" * 16  # a valid id that stands in where none can be computed


def with_content_question_id(question: Any, free: bool) -> Any:
    """The question (an episode's, or a bank line) with its id made the content address
    where the producer left it out (null or absent: the seeds define the id as that
    address, and their capture code wrote null where it had not computed one), and, when
    ``free``, where the id is the producer's own (any other string, such as ``llm_…`` or the
    later capture code's 16-hex fingerprint of a template and its parameters: it moves to
    ``capture_id``), so questions join and split as in every other layout. In the seeds'
    layout any other id is left to validation and the checks."""
    if not isinstance(question, dict):
        return question  # validation names what is missing
    given, hint, text = question.get("id"), question.get("hint"), question.get("question_text")
    if not isinstance(text, str) or not (hint is None or isinstance(hint, str)):
        # no address can be computed: the id it would have replaced is no error of its own,
        # so a stand-in lets validation name the text or hint alone (the line is a reject)
        replaced = given is None or (free and isinstance(given, str))
        return {**question, "id": _NO_ADDRESS} if replaced else question
    content = question_id(text, hint)
    own = free and isinstance(given, str) and given != content
    if not (given is None or own):
        return question
    return {**question, "id": content, "capture_id": given}


def _repeated(record: Any, key: str, unique_key: str, where: str) -> FieldError:
    """The error of a repeated key. A bank question's id is its content address (a
    producer's own id is kept as ``capture_id``), so a repeat is the same question, its text
    and hint, asked again."""
    if isinstance(record, Question):
        said = (
            f"the same question_text and hint as {where} (question {key!r}): a question is "
            "kept once"
        )
        return FieldError("$.question_text", said)
    return FieldError(f"$.{unique_key}", f"{key!r} already seen at {where}")


@dataclass
class Validator(Generic[ModelT]):
    """Validates lines against one model; optionally rejects repeats of a key field.

    The first occurrence of a key wins; later ones are rejected as ``duplicate_<key>`` with
    the first occurrence named, so the choice is visible and reversible.
    """

    model: type[ModelT]
    unique_key: str | None = None
    first_seen: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    precision: int | None = None  # the build's hash scheme: what a malformed hash should be

    def validate(self, line: SourceLine, read: LineJSON | None = None) -> Valid[ModelT] | Reject:
        """``read``: the line as its other checks read it, for ``parse_line``."""
        value, rejected = parse_line(line, read)
        if rejected is not None:
            return rejected
        if isinstance(value, list):  # the usual slip: a JSON array where lines are records
            said = (
                "a line holds one record (a JSON object), got an array: write one record per line"
            )
            if named_jsonl(line.path):
                said += ", or name the file .json to read it as a list of records"
            return Reject(line.path, line.number, SCHEMA, (FieldError("$", said),), line.raw)
        layout, spelled = SEEDS.name, value
        if self.model is Episode and isinstance(value, dict):
            try:
                found = recognise(value)
            except NoLayout as exc:
                where = f"$.{exc.missing[0]}" if len(exc.missing) == 1 else "$"
                error = FieldError(where, str(exc))
                return Reject(line.path, line.number, SCHEMA, (error,), line.raw)
            clashes = found.conflicts(value)
            if clashes:
                errors = tuple(FieldError(path, said) for path, said in clashes)
                return Reject(line.path, line.number, SCHEMA, errors, line.raw)
            layout, value = found.name, found.to_model(value)
            question = with_content_question_id(value.get("question"), found.free_question_id)
            if question is not value.get("question"):
                value = {**value, "question": question}
        elif self.model is Question:  # a question bank's line
            value = with_content_question_id(with_model_keys(value), free=True)
        try:
            record = self.model.model_validate(value)
        except ValidationError as exc:
            errors = tuple(
                FieldError(e.path, teach(value, e.path, e.message, self.precision))
                for e in schema_errors(exc)
            )
            if layout != SEEDS.name:  # name the line's own keys, not the model's
                errors = tuple(FieldError(layout_path(layout, e.path), e.message) for e in errors)
            elif self.model is Question:
                errors = tuple(FieldError(bank_path(spelled, e.path), e.message) for e in errors)
            return Reject(line.path, line.number, SCHEMA, errors, line.raw)
        if self.unique_key is not None:
            key = getattr(record, self.unique_key)
            first = self.first_seen.setdefault(key, line.place)
            if first != line.place:
                error = _repeated(record, key, self.unique_key, f"{first[0]}:{first[1]}")
                kind = f"duplicate_{self.unique_key}"
                return Reject(line.path, line.number, kind, (error,), line.raw)
        return Valid(line, record, layout)
