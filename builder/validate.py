"""Validate stage: one input line becomes a model instance, a blank, or a reject.

Parsing is RFC 8259 JSON (orjson, UTF-8 only) plus the one extension Python's ``json``
writes by default, and so the capture code does: the bare tokens ``NaN``, ``Infinity`` and
``-Infinity`` (read by the stdlib, only for lines orjson refuses that hold them). Then the
pydantic models of ``schemas``. A reject keeps the raw line unchanged plus where it came
from and why, so nothing is lost and every error can be found: ``data/x.jsonl:17 schema
$.teacher_gold_trace.hooks[3].value_hash: String should match pattern ...``.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import orjson
from pydantic import BaseModel, ValidationError

from builder.banks import bank_path, with_model_keys
from builder.documents import named_jsonl
from builder.hashing import question_id
from builder.sources import SourceLine
from builder.teach import teach
from schemas.episode import Episode, Question
from schemas.layouts import SEEDS, NoLayout, layout_path, recognise

ModelT = TypeVar("ModelT", bound=BaseModel)

# Reject kinds, in the order a line is examined.
LINE_TOO_LONG = "line_too_long"
INVALID_UTF8 = "invalid_utf8"
INVALID_JSON = "invalid_json"
SCHEMA = "schema"
DUPLICATE_KEY = "duplicate_key"


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str


@dataclass(frozen=True)
class Reject:
    """A line that did not make it into the tables, with everything needed to fix it."""

    source_file: str
    line: int | None  # None for database rows, which are named by ``key`` instead
    kind: str
    errors: tuple[FieldError, ...]
    raw: bytes
    key: str | None = None  # e.g. ``actions.action_uuid=...`` for a database row

    @property
    def path(self) -> str:
        return self.errors[0].path

    @property
    def message(self) -> str:
        return "; ".join(f"{e.path}: {e.message}" for e in self.errors)

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "source_file": self.source_file,
            "line": self.line,
            "kind": self.kind,
            "path": self.path,
            "message": self.message,
            "errors": [{"path": e.path, "message": e.message} for e in self.errors],
        }
        if self.key is not None:
            record["key"] = self.key
        try:
            record["raw"] = self.raw.decode("utf-8")
        except UnicodeDecodeError:
            record["raw_base64"] = base64.b64encode(self.raw).decode("ascii")
        return record

    def __str__(self) -> str:
        where = self.source_file if self.line is None else f"{self.source_file}:{self.line}"
        if self.key is not None:
            where += f" [{self.key}]"
        return f"{where}: {self.kind}: {self.message}"


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


def parse_line(line: SourceLine) -> tuple[Any, Reject | None]:
    """JSON-decode a line; returns ``(value, None)`` or ``(None, reject)``."""

    def reject(kind: str, message: str) -> tuple[Any, Reject]:
        return None, Reject(line.path, line.number, kind, (FieldError("$", message),), line.raw)

    if line.too_long:
        message = (
            "the line is longer than max_line_bytes (its first 256 bytes are kept here); if "
            "it is one record, raise max_line_bytes in dataset.toml's [checks] and build again"
        )
        return reject(LINE_TOO_LONG, message)
    try:
        return _exact_integers(line.raw, orjson.loads(line.raw)), None
    except orjson.JSONDecodeError as exc:
        try:
            line.raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            byte = line.raw[bad.start]
            message = f"invalid UTF-8 byte 0x{byte:02x} at byte {bad.start + 1}"
            return None, Reject(
                line.path,
                line.number,
                INVALID_UTF8,
                (FieldError(_undecodable_path(line.raw), message),),
                line.raw,
            )
        surrogates = _lone_surrogates(line.raw)
        if surrogates:
            errors = tuple(
                FieldError(path, _SURROGATE_MESSAGE.format(char)) for path, char in surrogates
            )
            return None, Reject(line.path, line.number, INVALID_UTF8, errors, line.raw)
        python_dialect = _python_dialect(line.raw)
        if python_dialect is not None:
            return python_dialect, None
        error = FieldError(_raw_control_path(line.raw), f"invalid JSON: {exc}")
        return None, Reject(line.path, line.number, INVALID_JSON, (error,), line.raw)


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_MESSAGE = (
    "holds the lone surrogate \\u{:04x}, escaped in the JSON: not a Unicode character, so it "
    "cannot be stored as UTF-8 text. It is what text decoded with errors='surrogateescape' "
    "keeps of a byte that was not UTF-8; decode captured output with errors='replace'"
)


def _lone_surrogates(raw: bytes, most: int = 5) -> list[tuple[str, int]]:
    """The JSON paths (at most ``most``) of the strings whose ``\\uXXXX`` escapes leave a
    surrogate unpaired (the stdlib reads them, orjson refuses them), with that code point;
    a key holding one is named by its object's path."""
    if b"\\u" not in raw:
        return []
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    found: list[tuple[str, int]] = []
    for path, texts in _json_strings(value):
        found += [(path, ord(bad.group())) for t in texts if (bad := _SURROGATE.search(t))]
        if len(found) >= most:
            return found[:most]
    return found


# Stands in for what made a line unreadable, so that the parsed line shows where it was:
# three noncharacters in a row, which no captured text holds (only a line that spelled all
# three as escapes before the bad spot would mislead it).
_MARK = "\ufdd0\ufdd1\ufdd2"
_CONTROL = re.compile("[\x00-\x1f]")
_UNDECODABLE = re.compile("[\udc80-\udcff]")  # what ``surrogateescape`` makes of a bad byte


def _raw_control_path(raw: bytes) -> str:
    """The JSON path of the first string holding a raw control character (a tab or a
    vertical tab pasted into a string, which JSON requires escaped), else ``$``."""
    text = raw.decode("utf-8", errors="replace")
    return _marked_path(_CONTROL.sub(_MARK, text)) if _CONTROL.search(text) else "$"


def _undecodable_path(raw: bytes) -> str:
    """The JSON path of the first string holding a byte that is not UTF-8 (a key's: its
    object's), or ``$`` when the line is no JSON even so."""
    return _marked_path(_UNDECODABLE.sub(_MARK, raw.decode("utf-8", errors="surrogateescape")))


def _marked_path(text: str) -> str:
    """The path of the first string of the JSON ``text`` that holds ``_MARK``, else ``$``."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return "$"
    for path, texts in _json_strings(value):
        if any(_MARK in t for t in texts):
            return path
    return "$"


def _json_strings(value: Any) -> Iterator[tuple[str, list[str]]]:
    """The strings of a decoded JSON value by path, depth first: a string node's own, an
    object's keys (named by the object's path)."""
    for node, path in _json_nodes(value):
        if isinstance(node, str):
            yield path, [node]
        elif isinstance(node, dict):
            yield path, list(node)


def _json_nodes(value: Any) -> Iterator[tuple[Any, str]]:
    """Every node of a decoded JSON value with its JSON path, depth first, in order."""
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        node, path = stack.pop()
        yield node, path
        if isinstance(node, dict):
            stack += [(v, f"{path}.{k}") for k, v in reversed(node.items())]
        elif isinstance(node, list):
            stack += [(v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node)))]


def _python_dialect(raw: bytes) -> Any | None:
    """The value of a line that is JSON as Python's ``json`` reads it but orjson refuses:
    ``NaN``/``Infinity`` tokens, or an integer too large for a double (``math.factorial(200)``
    is an answer ``json.dumps`` writes); else None."""
    if b"NaN" not in raw and b"Infinity" not in raw and not has_long_digit_run(raw):
        return None
    try:
        value = json.loads(raw, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return None
    return value  # never None: a line holding these tokens is not `null`


def _finite_float(text: str) -> float:
    """A JSON number as Python reads it, refused when a double cannot hold it (``1`` and 400
    zeros ``.0``: Python reads ``inf``, which the line did not say; ``Infinity`` is a token)."""
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number {text[:20]}… is beyond a double's range")
    return number


LONG_RUN = 19  # digits: the shortest run that can be an integer beyond 64 bits


def has_long_digit_run(raw: bytes) -> bool:
    """Whether ``raw`` holds 19+ consecutive ASCII digits (what ``rb"\\d{19,}"`` finds).

    Vectorized over the line's bytes: a mask of the digits, then runs of 2, 4, 8, 16 and
    19 digits, each the AND of two shorter runs overlapping (a run of ``a + b`` digits
    starts at ``i`` when runs of ``a`` start at ``i`` and at ``i + b``). Linear, like the
    translate-and-search it replaces and ≈ 2.5× faster on 56 KB lines; the regex retries at
    every digit."""
    if len(raw) < LONG_RUN:
        return False
    run = (np.frombuffer(raw, dtype=np.uint8) - np.uint8(ord("0"))) < 10  # wraps below "0"
    for step in (1, 2, 4, 8, 3):
        run = run[:-step] & run[step:]
    return bool(run.any())


def _exact_integers(raw: bytes, value: Any) -> Any:
    """orjson reads an integer beyond 64 bits as a float (``2**70`` -> ``1.18e21``), which
    changes the value and its hash; such lines are read again by the stdlib, which keeps
    integers exact. Only lines with a run of 19+ digits can hold one, so this is rare."""
    if not has_long_digit_run(raw):
        return value
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return value


def with_content_question_id(question: Any, free: bool) -> Any:
    """The question (an episode's, or a bank line) with its id made the content address
    where the producer left it out (null or absent: the seeds define the id as that
    address, and their capture code wrote null where it had not computed one), and, when
    ``free``, where the id is the producer's own (any other string, such as ``llm_…`` or the
    later capture code's 16-hex fingerprint of a template and its parameters: it moves to
    ``capture_id``), so questions join and split as in every other layout. In the seeds'
    layout any other id is left to validation and the checks."""
    if not isinstance(question, dict) or not isinstance(question.get("question_text"), str):
        return question  # validation names what is missing
    given, hint = question.get("id"), question.get("hint")
    if not (hint is None or isinstance(hint, str)):
        return question
    content = question_id(question["question_text"], hint)
    own = free and isinstance(given, str) and given != content
    if not (given is None or own):
        return question
    return {**question, "id": content, "capture_id": given}


@dataclass
class Validator(Generic[ModelT]):
    """Validates lines against one model; optionally rejects repeats of a key field.

    The first occurrence of a key wins; later ones are rejected as ``duplicate_<key>`` with
    the first occurrence named, so the choice is visible and reversible.
    """

    model: type[ModelT]
    unique_key: str | None = None
    first_seen: dict[str, tuple[str, int]] = field(default_factory=dict)
    precision: int | None = None  # the build's hash scheme: what a malformed hash should be

    def validate(self, line: SourceLine) -> Valid[ModelT] | Reject:
        value, rejected = parse_line(line)
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
            first = self.first_seen.setdefault(key, (line.path, line.number))
            if first != (line.path, line.number):
                where = f"{first[0]}:{first[1]}"
                error = FieldError(f"$.{self.unique_key}", f"{key!r} already seen at {where}")
                kind = f"duplicate_{self.unique_key}"
                return Reject(line.path, line.number, kind, (error,), line.raw)
        return Valid(line, record, layout)


class _Object(dict):
    """A decoded JSON object that remembers which of its keys appeared more than once."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.repeated = sorted({k for k, _ in pairs if sum(1 for j, _ in pairs if j == k) > 1})


_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def _delimiters(text: bytes) -> int:
    """Quote characters of JSON ``text`` not preceded by a backslash: two per string, less
    one per string whose text ends in a backslash written ``\\\\`` (a quote in a string's
    text is written ``\\"`` or ``\\u0022``: never counted)."""
    chars = np.frombuffer(text, dtype=np.uint8)
    quotes = chars == _QUOTE
    escaped = quotes[1:] & (chars[:-1] == _BACKSLASH)
    return int(np.count_nonzero(quotes)) - int(np.count_nonzero(escaped))


def duplicate_keys(raw: bytes) -> list[str]:
    """JSON paths of keys that appear twice in one object of ``raw`` (the last one wins in
    every JSON parser here, silently).

    Cheap and exact for the common line: written again by orjson, the parsed value keeps
    every string of the line but the keys dropped with their repeats (and the strings of
    their values), and writes a backslash as ``\\\\`` where the line may have spelled it
    ``\\u005c`` (one delimiter fewer, for a string ending in one). So the two counts are
    equal only when no key was repeated. A line with fewer delimiters written again (a
    repeat, or that rare spelling) or one orjson cannot read is parsed again, which finds
    the repeats and where they are, if any."""
    try:
        if _delimiters(raw) == _delimiters(orjson.dumps(orjson.loads(raw))):
            return []
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        pass  # Python's dialect (NaN) or a line that is no JSON: look closely
    try:
        value = json.loads(raw, object_pairs_hook=_Object)
    except (ValueError, RecursionError):
        return []
    found = [
        f"{path}.{key}"
        for node, path in _json_nodes(value)
        if isinstance(node, _Object)
        for key in node.repeated
    ]
    return sorted(found)


def is_blank(line: SourceLine) -> bool:
    return not line.too_long and not line.raw.strip()
