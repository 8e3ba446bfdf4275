"""Validate: every kind of bad line becomes a reject with the exact JSON path and the raw line."""

from __future__ import annotations

import base64
import json
import math
import random
import re
from types import SimpleNamespace
from typing import Any

import pytest

from builder.contract.hashing import question_id, value_hash
from builder.sources.inputs import SourceLine
from builder.validate import fastpath
from builder.validate.json_lines import duplicate_keys, has_long_digit_run, is_blank, parse_line
from builder.validate.reject import Reject
from builder.validate.validator import Valid, Validator, json_path
from schemas.episode import Episode, Question
from schemas.vocabulary import INVALID_JSON, INVALID_UTF8, LINE_TOO_LONG, SCHEMA


def validate(raw: bytes, number: int = 1, path: str = "runs/a.jsonl") -> Valid | Reject:
    return Validator(Episode, "episode_id").validate(SourceLine(path, number, raw))


def reject_of(record: Any) -> Reject:
    outcome = validate(json.dumps(record).encode())
    assert isinstance(outcome, Reject), "expected a reject"
    return outcome


def test_a_clean_episode_validates(make: SimpleNamespace) -> None:
    outcome = validate(make.line(make.episode()), number=7)
    assert isinstance(outcome, Valid)
    assert outcome.record.episode_id == "ep-0001"
    assert outcome.line.number == 7


def test_truncated_json(make: SimpleNamespace) -> None:
    raw = make.line(make.episode())[:-20]
    outcome = validate(raw, number=3)
    assert isinstance(outcome, Reject)
    assert (outcome.kind, outcome.line, outcome.path) == (INVALID_JSON, 3, "$")
    assert outcome.raw == raw
    assert "invalid JSON" in outcome.message


def test_a_numeric_timestamp_is_refused_in_words(make: SimpleNamespace) -> None:
    record = make.episode()
    record["timestamp"] = 1700000000
    outcome = reject_of(record)
    assert outcome.message == ("$.timestamp: expected an ISO-8601 string, got int 1700000000")


@pytest.mark.parametrize(
    ("where", "bad", "path"),
    [
        (("verified",), "yes", "$.verified"),
        (("verified",), 1, "$.verified"),
        (("question", "n_steps"), "3", "$.question.n_steps"),
        (("question", "n_steps"), 3.0, "$.question.n_steps"),
        (("question", "hint"), 3, "$.question.hint"),
        (("question", "difficulty"), 3, "$.question.difficulty"),
        (("episode_id",), 17, "$.episode_id"),
        (("episode_id",), "", "$.episode_id"),
        (("timestamp",), "yesterday", "$.timestamp"),
        (("timestamp",), 1700000000, "$.timestamp"),  # seconds or milliseconds? refused
        (
            ("teacher_gold_trace", "execution_success"),
            "true",
            "$.teacher_gold_trace.execution_success",
        ),
        (
            ("teacher_gold_trace", "turns", 1, "turn_index"),
            "1",
            "$.teacher_gold_trace.turns[1].turn_index",
        ),
        (("teacher_gold_trace", "total_turns"), -1, "$.teacher_gold_trace.total_turns"),
        (("consistency_traces",), {"not": "a list"}, "$.consistency_traces"),
        (
            ("triangulation_metadata", "majority_count"),
            True,
            "$.triangulation_metadata.majority_count",
        ),
        (
            ("rl_verification_data", "expected_final_answer_hash"),
            "abc",
            "$.rl_verification_data.expected_final_answer_hash",
        ),
        (
            ("conversation_for_sft", "messages", 0, "role"),
            "robot",
            "$.conversation_for_sft.messages[0].role",
        ),
    ],
)
def test_wrong_types_are_strict_schema_rejects(
    make: SimpleNamespace, where: tuple[Any, ...], bad: Any, path: str
) -> None:
    record = make.episode()
    target = record
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = bad
    outcome = reject_of(record)
    assert outcome.kind == SCHEMA
    assert outcome.path == path
    assert [e.path for e in outcome.errors] == [path]
    assert outcome.message.startswith(f"{path}: ")
    # The message shows what the line holds there (pydantic's words never do).
    shown = "an object" if isinstance(bad, dict) else json.dumps(bad)
    assert f"got {shown}" in outcome.message or repr(bad) in outcome.message


def test_a_long_offending_value_is_cut_short(make: SimpleNamespace) -> None:
    record = make.episode()
    record["verified"] = "y" * 500
    message = reject_of(record).message
    assert message.endswith(', got "' + "y" * 58 + "…") and len(message) < 120


@pytest.mark.parametrize(
    ("where", "path"),
    [
        (("teacher_gold_trace",), "$.teacher_gold_trace"),
        (("verified",), "$.verified"),
        (("question", "question_text"), "$.question.question_text"),
        (("episode_id",), "$.episode_id"),
        (
            ("teacher_gold_trace", "turns", 0, "execution"),
            "$.teacher_gold_trace.turns[0].execution",
        ),
        (
            ("teacher_gold_trace", "turns", 1, "execution", "hooks", 0, "value_hash"),
            "$.teacher_gold_trace.turns[1].execution.hooks[0].value_hash",
        ),
    ],
)
def test_missing_required_field(make: SimpleNamespace, where: tuple[Any, ...], path: str) -> None:
    record = make.episode()
    target = record
    for key in where[:-1]:
        target = target[key]
    del target[where[-1]]
    outcome = reject_of(record)
    assert (outcome.kind, outcome.path) == (SCHEMA, path)
    assert "Field required" in outcome.message


def test_bad_hex_deep_inside_a_flat_trace(make: SimpleNamespace) -> None:
    hooks = [make.hook("a", 1), make.hook("b", 2, ["a"])]
    hooks[1]["value_hash"] = "0123456789abcdeg"  # 'g' is not hex
    record = make.episode(gold=make.flat_trace(42, hooks=hooks))
    outcome = reject_of(record)
    assert outcome.path == "$.teacher_gold_trace.hooks[1].value_hash"
    for bad in ("0123456789abcde", "0123456789ABCDEF", "0123456789abcdef0"):
        hooks[1]["value_hash"] = bad
        assert reject_of(record).path == "$.teacher_gold_trace.hooks[1].value_hash", bad


def test_wrong_type_deep_inside_a_consistency_trace(make: SimpleNamespace) -> None:
    consistency = [make.turns_trace(42), make.flat_trace(42)]
    consistency[0]["turns"][2]["execution"]["success"] = "true"
    outcome = reject_of(make.episode(consistency=consistency))
    assert outcome.path == "$.consistency_traces[0].turns[2].execution.success"


def test_several_errors_are_all_reported_first_one_is_the_path(make: SimpleNamespace) -> None:
    record = make.episode()
    record["verified"] = "yes"
    record["question"]["n_steps"] = "2"
    outcome = reject_of(record)
    assert [e.path for e in outcome.errors] == ["$.verified", "$.question.n_steps"]
    assert outcome.path == "$.verified"
    assert "$.verified: " in outcome.message and "; $.question.n_steps: " in outcome.message


def test_message_content_union_errors_keep_a_clean_path(make: SimpleNamespace) -> None:
    record = make.episode()
    record["conversation_for_sft"]["messages"][1]["content"] = 5
    assert reject_of(record).path == "$.conversation_for_sft.messages[1].content"


def test_non_utf8_bytes(make: SimpleNamespace) -> None:
    raw = make.line(make.episode()).replace(b"sales.csv", b"sales\xff.csv", 1)
    outcome = validate(raw, number=9)
    assert isinstance(outcome, Reject)
    assert (outcome.kind, outcome.path, outcome.line) == (
        INVALID_UTF8,
        "$.question.question_text",
        9,
    )
    position = raw.index(b"\xff") + 1
    assert f"at byte {position}" in outcome.message
    assert "0xff" in outcome.message
    record = outcome.to_json()
    assert "raw" not in record
    assert base64.b64decode(record["raw_base64"]) == raw


def test_a_raw_control_character_names_the_string_holding_it(make: SimpleNamespace) -> None:
    raw = make.line(make.episode()).replace(b"sales.csv", b"sales\x0b.csv", 1)
    outcome = validate(raw)
    assert isinstance(outcome, Reject) and outcome.kind == INVALID_JSON
    assert outcome.path == "$.question.question_text"
    assert "control character" in outcome.message
    truncated = validate(raw[: len(raw) // 2])  # no JSON at all even so: the whole line
    assert isinstance(truncated, Reject) and truncated.path == "$"
    # an escaped newline or an escaped "\udc80" earlier in the line is no raw character
    record = make.episode("ep\nid \udc80")  # escapes, in a field before the bad one
    tab = make.line(record).replace(b"sales.csv", b"sales\t.csv", 1)
    assert validate(tab).path == "$.question.question_text"  # type: ignore[union-attr]
    byte = make.line(record).replace(b"sales.csv", b"sales\xff.csv", 1)
    assert validate(byte).path == "$.question.question_text"  # type: ignore[union-attr]


def test_a_number_beyond_a_double_is_refused_however_it_is_written() -> None:
    """``1e400`` and ``1`` with 400 zeros ``.0`` are the same number: Python reads both as
    ``inf``, which the line does not say (``Infinity`` is its own token)."""
    for number in (b"1e400", b"1" + b"0" * 400 + b".0"):
        value, rejected = parse_line(SourceLine("a.jsonl", 1, b'{"f": ' + number + b"}"))
        assert value is None and rejected is not None and rejected.kind == INVALID_JSON
        assert rejected.path == "$.f" and "beyond a double's range" in rejected.message
    # named where it is, however deep, and the first of several
    raw = b'{"a": 1.5, "b": {"c": [2, -1e999]}, "d": 1e400}'
    _, rejected = parse_line(SourceLine("a.jsonl", 1, raw))
    assert rejected is not None and rejected.path == "$.b.c[1]"
    assert rejected.message.startswith("$.b.c[1]: -1e999 is beyond")
    value, rejected = parse_line(SourceLine("a.jsonl", 1, b'{"f": Infinity}'))
    assert rejected is None and value == {"f": float("inf")}


def test_a_lone_surrogate_names_the_field_and_how_to_capture_it(make: SimpleNamespace) -> None:
    """Python's ``json.dumps`` writes text decoded with ``surrogateescape`` as an unpaired
    ``\\udc80`` escape: JSON a parser may read, but no Unicode text (Arrow holds UTF-8)."""
    record = make.episode()
    record["teacher_gold_trace"]["turns"][1]["execution"]["stdout"] = "caf\udce9"
    record["question"]["template_params"] = {"col\ud800": 1}
    outcome = validate(json.dumps(record).encode(), number=4)
    assert isinstance(outcome, Reject)
    assert (outcome.kind, outcome.line) == (INVALID_UTF8, 4)
    paths = {e.path: e.message for e in outcome.errors}
    assert set(paths) == {
        "$.question.template_params",
        "$.teacher_gold_trace.turns[1].execution.stdout",
    }
    assert "\\udce9" in paths["$.teacher_gold_trace.turns[1].execution.stdout"]
    assert "errors='replace'" in outcome.message
    paired = make.episode()  # a pair is one character (ensure_ascii writes emoji this way)
    paired["teacher_gold_trace"]["turns"][1]["execution"]["stdout"] = "done \U0001f600"
    assert isinstance(validate(json.dumps(paired).encode()), Valid)


@pytest.mark.parametrize(
    "raw",
    [b"[1, 2, 3]", b'"episode"', b"42", b"null", b"[]"],
)
def test_json_that_is_not_an_object_is_a_schema_reject(raw: bytes) -> None:
    outcome = validate(raw)
    assert isinstance(outcome, Reject)
    assert (outcome.kind, outcome.path) == (SCHEMA, "$")


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_python_json_tokens_are_accepted(make: SimpleNamespace, literal: bytes) -> None:
    # Python's json.dumps (the capture code's writer) emits these for NaN and ±inf.
    raw = make.line(make.episode()).replace(b'"final_answer": 42', b'"final_answer": ' + literal, 1)
    assert literal in raw
    outcome = validate(raw)
    assert isinstance(outcome, Valid)
    answer = outcome.record.teacher_gold_trace.final_answer
    assert json.dumps(answer) == literal.decode()


@pytest.mark.parametrize("raw", [b'{"x": nan}', b'{"x": Inf}', b'{"x": NaN,}', b"{NaN: 1}"])
def test_only_pythons_exact_tokens_are_accepted(raw: bytes) -> None:
    _, rejected = parse_line(SourceLine("a.jsonl", 1, raw))
    assert rejected is not None and rejected.kind == INVALID_JSON


def test_duplicate_episode_id_names_the_first_occurrence(make: SimpleNamespace) -> None:
    validator = Validator(Episode, "episode_id")
    first = make.line(make.episode("ep-7"))
    other = make.line(make.episode("ep-8"))
    assert isinstance(validator.validate(SourceLine("a.jsonl", 4, first)), Valid)
    assert isinstance(validator.validate(SourceLine("a.jsonl", 5, other)), Valid)
    again = validator.validate(SourceLine("b.jsonl", 2, first))
    assert isinstance(again, Reject)
    assert (again.kind, again.path, again.line, again.source_file) == (
        "duplicate_episode_id",
        "$.episode_id",
        2,
        "b.jsonl",
    )
    assert "a.jsonl:4" in again.message and "'ep-7'" in again.message
    # a third copy still names the first, not the second
    third = validator.validate(SourceLine("c.jsonl", 1, first))
    assert isinstance(third, Reject) and "a.jsonl:4" in third.message


def test_an_invalid_line_does_not_claim_its_key(make: SimpleNamespace) -> None:
    validator = Validator(Episode, "episode_id")
    broken = make.episode("ep-1")
    broken["verified"] = "yes"
    assert isinstance(validator.validate(SourceLine("a.jsonl", 1, make.line(broken))), Reject)
    fixed = validator.validate(SourceLine("a.jsonl", 2, make.line(make.episode("ep-1"))))
    assert isinstance(fixed, Valid)


def test_question_validator_keys_on_id(make: SimpleNamespace) -> None:
    validator = Validator(Question, "id")
    raw = make.line(make.question())
    assert isinstance(validator.validate(SourceLine("q.jsonl", 1, raw)), Valid)
    again = validator.validate(SourceLine("q.jsonl", 2, raw))
    assert isinstance(again, Reject) and again.kind == "duplicate_id"


def test_a_bank_question_asked_again_under_another_id_says_so() -> None:
    """A producer's own ids differ, the content address does not: the reject names the
    repeated text at ``$.question_text``, not an id the line never gave."""
    validator = Validator(Question, "id")
    text = "What is the mean charges for each smoker?"
    for number, own in ((2, "llm_insurance_0002"), (11, "llm_insurance_0011")):
        record = {"id": own, "question_text": text, "hint": None}
        outcome = validator.validate(SourceLine("bank.json", number, json.dumps(record).encode()))
    assert isinstance(outcome, Reject) and outcome.kind == "duplicate_id"
    assert outcome.path == "$.question_text"
    address = question_id(text, None)
    assert outcome.message == (
        f"$.question_text: the same question_text and hint as bank.json:2 (question "
        f"{address!r}): a question is kept once"
    )


@pytest.mark.parametrize(
    "blank",
    [
        *("", " ", "\t\n", "\u3000\u00a0", "\x1c\x1f", "\u200b", " \ufeff\u200d\u2060"),
        *("\u00ad\u202e", "\u034f", "\ufe0f", "\U000e0020", "\u3164", "\u2800", "\u180b\uffa0"),
    ],
)
def test_a_blank_question_text_is_a_reject_that_says_so(make: SimpleNamespace, blank: str) -> None:
    """Empty or only spaces (Python's, which count \\x1c-\\x1f too) or invisible characters,
    in an episode and in a bank: the same reject from the fast path and from pydantic, naming
    the field."""
    said = "empty or only spaces or invisible characters: a question needs its text"
    record = make.episode()
    hint = record["question"]["hint"]
    record["question"] = {**record["question"], "question_text": blank}
    record["question"]["id"] = question_id(blank, hint)
    outcome = reject_of(record)
    assert (outcome.kind, outcome.path) == (SCHEMA, "$.question.question_text")
    assert said in outcome.message
    assert fastpath.decode(Episode, json.dumps(record).encode()) is None  # left to pydantic
    question = {**make.question(), "question_text": blank, "id": None}
    banked = Validator(Question, "id").validate(SourceLine("q.jsonl", 4, make.line(question)))
    assert isinstance(banked, Reject) and banked.path == "$.question_text"
    assert said in banked.message
    # a word among the spaces is a question
    record["question"]["question_text"] = blank + "why?"
    record["question"]["id"] = question_id(blank + "why?", hint)
    assert isinstance(validate(json.dumps(record).encode()), Valid)
    assert fastpath.decode(Episode, json.dumps(record).encode()) is not None


def test_a_bank_question_without_an_id_gets_the_content_address(make: SimpleNamespace) -> None:
    """Question banks follow the later layout's rule: a null or absent id is computed (the
    capture side's bank lines carry none), and a producer's own id is kept as
    ``capture_id``; a 16-hex id stays the id."""
    validator = Validator(Question, "id")
    question = make.question()
    content = question["id"]
    del question["id"]
    absent = validator.validate(SourceLine("q.jsonl", 1, make.line(question)))
    assert isinstance(absent, Valid) and absent.record.id == content
    again = validator.validate(SourceLine("q.jsonl", 2, make.line({**question, "id": None})))
    assert isinstance(again, Reject) and again.kind == "duplicate_id"
    other = {**question, "question_text": "Another question?"}
    own = validator.validate(SourceLine("q.jsonl", 3, make.line({**other, "id": "llm_q001"})))
    assert isinstance(own, Valid) and own.record.capture_id == "llm_q001"
    assert own.record.id == question_id("Another question?", question["hint"])


def test_reject_to_json_contract(make: SimpleNamespace) -> None:
    record = make.episode()
    record["question"]["n_steps"] = "3"
    raw = ("  " + json.dumps(record, ensure_ascii=False) + "\t").encode()
    outcome = validate(raw, number=12, path="data/episodes/bad.jsonl")
    assert isinstance(outcome, Reject)
    out = outcome.to_json()
    assert out["source_file"] == "data/episodes/bad.jsonl"
    assert out["line"] == 12
    assert out["kind"] == "schema"
    assert out["path"] == "$.question.n_steps"
    assert out["message"].startswith("$.question.n_steps: ")
    assert out["errors"] == [{"path": "$.question.n_steps", "message": outcome.errors[0].message}]
    assert out["raw"].encode() == raw  # unchanged, whitespace and all
    json.dumps(out)  # serialisable as is
    assert str(outcome).startswith("data/episodes/bad.jsonl:12: schema: $.question.n_steps: ")


def test_too_long_line_is_a_reject_and_not_blank() -> None:
    line = SourceLine("a.jsonl", 5, b"   ", too_long=True)
    assert not is_blank(line)
    outcome = Validator(Episode).validate(line)
    assert isinstance(outcome, Reject)
    assert (outcome.kind, outcome.line) == (LINE_TOO_LONG, 5)


@pytest.mark.parametrize(
    ("raw", "blank"),
    [(b"", True), (b"   ", True), (b"\t \t", True), (b"{}", False), (b" x ", False)],
)
def test_is_blank(raw: bytes, blank: bool) -> None:
    assert is_blank(SourceLine("a.jsonl", 1, raw)) is blank


def test_integers_beyond_64_bits_stay_exact(make: SimpleNamespace) -> None:
    answer = 2**70 + 1  # parsed as a float this would be 1180591620717411303424.0
    record = make.episode(gold=make.turns_trace(answer), consistency=[make.flat_trace(answer)])
    outcome = validate(make.line(record))
    assert isinstance(outcome, Valid)
    gold = outcome.record.teacher_gold_trace
    assert gold.final_answer == answer and type(gold.final_answer) is int
    assert gold.final_answer_hash == value_hash(answer)
    value, rejected = parse_line(SourceLine("a.jsonl", 1, b'{"n": -9223372036854775809}'))
    assert rejected is None and value == {"n": -9223372036854775809}


@pytest.mark.parametrize(
    "answer", [math.factorial(200), 10**309, -(10**400)], ids=["200!", "1e309", "-1e400"]
)
def test_integers_beyond_a_double_are_read_as_python_writes_them(
    make: SimpleNamespace, answer: int
) -> None:
    """orjson refuses an integer a double cannot hold ("number is infinity"); Python's
    ``json.dumps`` writes it (an answer of ``math.factorial(200)``), so the line is valid and
    the integer exact."""
    record = make.episode(gold=make.turns_trace(answer), consistency=[make.flat_trace(answer)])
    outcome = validate(make.line(record))
    assert isinstance(outcome, Valid), outcome
    gold = outcome.record.teacher_gold_trace
    assert gold.final_answer == answer and gold.final_answer_hash == value_hash(answer)


def test_long_digit_runs_inside_strings_parse_normally() -> None:
    value, rejected = parse_line(
        SourceLine("a.jsonl", 1, b'{"id": "12345678901234567890", "x": 1.5}')
    )
    assert rejected is None
    assert value == {"id": "12345678901234567890", "x": 1.5}
    # a NaN token next to a long number: both kept exactly
    value, rejected = parse_line(SourceLine("a.jsonl", 1, b'{"n": 12345678901234567890, "x": NaN}'))
    assert rejected is None and value["n"] == 12345678901234567890 and value["x"] != value["x"]


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("hooks", 3, "value_hash"), "$.hooks[3].value_hash"),
        ((), "$"),
        (("content", "str"), "$.content"),
        (("content", "list[dict[str,any]]", 0), "$.content[0]"),
        ((0, 1), "$[0][1]"),
    ],
)
def test_json_path(loc: tuple[Any, ...], path: str) -> None:
    assert json_path(loc) == path


def test_a_placeholder_id_or_hash_says_what_it_should_be(make: SimpleNamespace) -> None:
    record = make.episode()
    record["question"]["id"] = "q001"  # capture test fixtures write these
    record["teacher_gold_trace"]["final_answer_hash"] = "hash0"
    record["rl_verification_data"]["expected_final_answer_hash"] = "HASH"
    outcome = validate(json.dumps(record).encode())
    assert isinstance(outcome, Reject) and outcome.kind == SCHEMA
    messages = {e.path: e.message for e in outcome.errors}
    question = record["question"]
    assert messages["$.question.id"] == (
        "'q001' is not 16 lowercase hex characters; "
        f"sha256(question_text|hint)[:16] is {question_id(question['question_text'], question['hint'])!r}"
    )
    assert messages["$.teacher_gold_trace.final_answer_hash"].endswith(
        f"value_hash(final_answer) is {value_hash(42)!r}"
    )
    assert messages["$.rl_verification_data.expected_final_answer_hash"].endswith(
        f"value_hash(expected_final_answer) is {value_hash(42)!r}"
    )
    record["teacher_gold_trace"].update(final_answer=None, final_answer_hash="")
    outcome = validate(json.dumps(record).encode())
    assert isinstance(outcome, Reject)
    messages = {e.path: e.message for e in outcome.errors}
    assert messages["$.teacher_gold_trace.final_answer_hash"] == (
        "'' is not 16 lowercase hex characters; with no final_answer it is null"
    )


def test_a_placeholder_hash_is_taught_under_the_build_s_hash_scheme(make: SimpleNamespace) -> None:
    """Built with ``--hash-precision 2``, the hash a producer should have written is the
    rounded scheme's, and the message says so."""
    record = make.episode()
    record["teacher_gold_trace"]["final_answer"] = 54.321
    record["teacher_gold_trace"]["final_answer_hash"] = "hash0"
    raw = SourceLine("runs/a.jsonl", 1, json.dumps(record).encode())
    outcome = Validator(Episode, precision=2).validate(raw)
    assert isinstance(outcome, Reject)
    messages = {e.path: e.message for e in outcome.errors}
    assert messages["$.teacher_gold_trace.final_answer_hash"] == (
        "'hash0' is not 16 lowercase hex characters; "
        f"value_hash(final_answer, rounded to 2) is {value_hash(54.321, 2)!r}"
    )
    assert value_hash(54.321, 2) != value_hash(54.321)


def test_other_pattern_errors_keep_their_message(make: SimpleNamespace) -> None:
    record = make.episode()
    record["teacher_gold_trace"]["turns"][0]["execution"]["hooks"][0]["value_hash"] = "xyz"
    outcome = validate(json.dumps(record).encode())
    assert isinstance(outcome, Reject)
    (error,) = outcome.errors
    assert "should match pattern" in error.message  # a stored hook value may be a summary


@pytest.mark.parametrize(
    ("raw", "paths"),
    [
        (b'{"a": 1, "b": [{"c": 1}]}', []),
        (b'{"a": 1, "a": 2}', ["$.a"]),
        (
            b'{"x": [{"c": 1}, {"c": 1, "c": 2}], "y": {"z": {"k": 0, "k": 0}}}',
            ["$.x[1].c", "$.y.z.k"],
        ),
        (b'{"a" :1,"a" :2}', ["$.a"]),  # unusual spacing
        (b'{"n": NaN, "n": 1}', ["$.n"]),  # Python's dialect
        (b'{"s": "\\":", "t": 1}', []),  # the token inside a string is not a key
        (b"not json", []),
        # A quote spelled \u0022 is written back as \", which used to hide the repeat.
        (b'{"a": 1, "a": 2, "s": "\\u0022:"}', ["$.a"]),
        (b'{"a": "\\u0022", "a": "\\u0022\\u0022"}', ["$.a"]),
        # A backslash spelled \u005c at a string's end is written back as \\.
        (b'{"a": "x\\u005c", "b": 1}', []),
        (b'{"a\\\\": 1, "a\\u005c": 2}', ["$.a\\"]),
    ],
)
def test_duplicate_keys_are_found_with_their_paths(raw: bytes, paths: list[str]) -> None:
    assert duplicate_keys(raw) == paths


class _Pairs(dict):  # type: ignore[type-arg]
    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)  # the last one wins, as in every parser
        keys = [k for k, _ in pairs]
        self.repeated = sorted({k for k in keys if keys.count(k) > 1})


def _repeated_paths(raw: bytes) -> list[str]:
    """The reference: every object of the parsed value, walked in full."""
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, _Pairs):
            found.extend(f"{path}.{k}" for k in node.repeated)
            for k, v in node.items():
                walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(json.loads(raw, object_pairs_hook=_Pairs), "$")
    return sorted(found)


_TRICKY_TEXT = ['"', "\\", '":', "\\u0022", "é", "\n", "x", "", "a\\"]


def _spelled(text: str, rng: random.Random) -> str:
    """A JSON string literal of ``text``, its quotes and backslashes spelled either way."""
    out = []
    for ch in text:
        if ch == '"':
            out.append(rng.choice(['\\"', "\\u0022"]))
        elif ch == "\\":
            out.append(rng.choice(["\\\\", "\\u005c", "\\u005C"]))
        else:
            out.append(json.dumps(ch, ensure_ascii=rng.random() < 0.5)[1:-1])
    return '"' + "".join(out) + '"'


def _document(rng: random.Random, depth: int = 0) -> str:
    kind = rng.random()
    if depth > 3 or kind < 0.3:
        return rng.choice(["1", "2.5", "true", "null", _spelled(rng.choice(_TRICKY_TEXT), rng)])
    if kind < 0.5:
        return "[" + ", ".join(_document(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    keys = [rng.choice(_TRICKY_TEXT) + rng.choice("ab") for _ in range(rng.randint(0, 4))]
    if keys and rng.random() < 0.3:
        keys.append(rng.choice(keys))  # a repeated key
    pairs = [f"{_spelled(k, rng)}: {_document(rng, depth + 1)}" for k in keys]
    return "{" + ", ".join(pairs) + "}"


def test_duplicate_keys_agree_with_a_full_walk_on_generated_lines() -> None:
    """Keys and values with quotes and backslashes spelled every way JSON allows, repeated
    keys at any depth: the cheap check never misses a repeat."""
    rng = random.Random(20261125)
    repeats = 0
    for _ in range(3000):
        raw = _document(rng).encode()
        expected = _repeated_paths(raw)
        repeats += bool(expected)
        assert duplicate_keys(raw) == expected, raw
    assert repeats > 300  # the generator does repeat keys


def test_long_digit_runs_are_what_the_regex_finds() -> None:
    rng = random.Random(7)
    pattern = re.compile(rb"\d{19,}")
    for _ in range(5000):
        parts = []
        for _ in range(rng.randint(0, 6)):
            parts.append(bytes(rng.choice(b"0123456789") for _ in range(rng.randint(0, 24))))
            parts.append(rng.choice([b"", b".", b"a", b"/", b":", b"\xff", b'"', b" "]))
        raw = b"".join(parts)
        assert has_long_digit_run(raw) is bool(pattern.search(raw)), raw
    for n in (18, 19, 20, 60):
        digits = b"9" * n
        for raw in (digits, b"x" + digits, digits + b"x", b"/" + digits + b":"):
            assert has_long_digit_run(raw) is (n >= 19), raw


def test_an_array_as_a_record_is_told_to_be_named_json_only_where_it_is_not() -> None:
    said = {
        path: Validator(Episode).validate(SourceLine(path, 1, b"[1, 2]")).message  # type: ignore[union-attr]
        for path in ("a.jsonl", "a.json")
    }
    assert "name the file .json" in said["a.jsonl"]
    assert "name the file .json" not in said["a.json"] and "one record per line" in said["a.json"]
