"""Normalize: exact row counts for both trace forms, hooks merged once, any-typed values kept
distinguishable, unknown fields kept, rollback, and tables that match ``schemas.tables``."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from builder.contract import rewards
from builder.contract.hashing import canonical_json, normalize_value, question_id, value_hash
from builder.normalize import Normalizer
from schemas import vocabulary
from schemas.episode import Question
from schemas.tables import TABLES


def run(
    make: SimpleNamespace, *records: dict[str, Any], **kwargs: Any
) -> tuple[dict[str, pa.Table], Normalizer]:
    normalizer = Normalizer(**kwargs)
    for i, record in enumerate(records, start=1):
        normalizer.episode(make.valid(record, number=i))
    return normalizer.take_tables(), normalizer


def rows(tables: dict[str, pa.Table], name: str) -> list[dict[str, Any]]:
    return tables[name].to_pylist()


# ---------------------------------------------------------------- row counts


def test_row_counts_for_both_trace_forms(make: SimpleNamespace) -> None:
    turns_form = make.episode("ep-1")  # gold: 3 turns; consistency: 3 flat traces of 2 cells
    flat_gold = make.episode(
        "ep-2",
        gold=make.flat_trace(42, cells=["a = 1", "b = 2", "c = a + b", "submit(42)"]),
        consistency=[make.turns_trace(42), make.flat_trace(42, cells=["submit(42)"])],
    )
    tables, _ = run(make, turns_form, flat_gold)
    assert tables["episodes"].num_rows == 2
    assert tables["traces"].num_rows == (1 + 3) + (1 + 2)
    assert tables["turns"].num_rows == (3 + 3 * 2) + (4 + 3 + 1)
    # hooks: ep-1 gold 2 turn hooks + 2 flat consistency traces with 1 hook + 1 with 1 hook;
    # ep-2 gold flat 1 hook + 2 turn hooks + 1
    assert tables["hooks"].num_rows == (2 + 3) + (1 + 2 + 1)
    assert tables["questions"].num_rows == 1  # same question in both episodes
    assert tables["messages"].num_rows == 4
    forms = {(r["trace_id"], r["form"]) for r in rows(tables, "traces")}
    assert ("ep-1:gold", "turns") in forms and ("ep-1:c0", "flat") in forms
    assert ("ep-2:gold", "flat") in forms and ("ep-2:c0", "turns") in forms


def test_a_trace_of_no_turns_keeps_the_turns_form(make: SimpleNamespace) -> None:
    # The later capture layout writes ``turns`` for every trace: a run that ended before its
    # first turn is a trace with no turns, not a flat one. Empty turns beside code cells are
    # the flat form.
    episode = make.episode(
        "ep-1",
        consistency=[
            make.turns_trace(42, turns=[], success=False, submitted=False),
            make.flat_trace(42) | {"turns": []},
        ],
    )
    tables, _ = run(make, episode)
    forms = {r["trace_id"]: (r["form"], r["n_turns"]) for r in rows(tables, "traces")}
    assert forms["ep-1:c0"] == ("turns", 0)
    assert forms["ep-1:c1"] == ("flat", 2)


def test_trace_rows_carry_role_index_and_counts(make: SimpleNamespace) -> None:
    tables, _ = run(make, make.episode("ep-1"))
    traces = {r["trace_id"]: r for r in rows(tables, "traces")}
    assert list(traces) == ["ep-1:gold", "ep-1:c0", "ep-1:c1", "ep-1:c2"]
    gold = traces["ep-1:gold"]
    assert (gold["role"], gold["trace_index"], gold["n_turns"], gold["n_hooks"]) == (
        "gold",
        0,
        3,
        2,
    )
    assert gold["submitted"] is True and gold["final_answer"] == "42"
    c2 = traces["ep-1:c2"]
    assert (c2["role"], c2["trace_index"], c2["submitted"], c2["execution_success"]) == (
        "consistency",
        2,
        False,
        False,
    )
    # per-trace counts agree with the child tables
    for trace_id, row in traces.items():
        assert row["n_turns"] == sum(t["trace_id"] == trace_id for t in rows(tables, "turns"))
        assert row["n_hooks"] == sum(h["trace_id"] == trace_id for h in rows(tables, "hooks"))


def test_flat_trace_turns_come_from_code_cells(make: SimpleNamespace) -> None:
    cells = ["import pandas as pd", "df = pd.read_csv('x')", "submit(len(df))"]
    tables, _ = run(make, make.episode(gold=make.flat_trace(42, cells=cells)))
    gold_turns = [r for r in rows(tables, "turns") if r["trace_id"] == "ep-0001:gold"]
    assert [(r["turn_index"], r["code"]) for r in gold_turns] == list(enumerate(cells))
    assert all(r["success"] is None and r["reasoning"] is None for r in gold_turns)
    gold_hooks = [r for r in rows(tables, "hooks") if r["trace_id"] == "ep-0001:gold"]
    assert [(h["listed_in"], h["turn_index"]) for h in gold_hooks] == [("trace", None)]


def test_turn_rows_record_submission_and_corrections(make: SimpleNamespace) -> None:
    turns = [
        make.turn(0, "df['prices']", success=False, stderr="KeyError: 'prices'"),
        make.turn(1, "df['price']", correction=make.correction(0)),
        make.turn(2, "submit(42)", submitted=42),
    ]
    tables, _ = run(make, make.episode(gold=make.turns_trace(42, turns=turns)))
    gold = [r for r in rows(tables, "turns") if r["trace_id"] == "ep-0001:gold"]
    assert [r["submitted"] for r in gold] == [False, False, True]
    assert [r["submitted_answer"] for r in gold] == [None, None, "42"]
    assert [r["has_correction"] for r in gold] == [False, True, False]
    assert gold[0]["stderr"] == "KeyError: 'prices'" and gold[0]["success"] is False
    (fix,) = rows(tables, "corrections")
    assert (fix["trace_id"], fix["turn_index"], fix["corrects_turn"]) == ("ep-0001:gold", 1, 0)
    assert fix["removed_lines"] == ["df['prices']"] and fix["added_lines"] == ["df['price']"]


# ---------------------------------------------------------------- hooks listed twice


def both_listings(make: SimpleNamespace) -> dict[str, Any]:
    gold = make.turns_trace(42)
    gold["hooks"] = [make.copy(h) for t in gold["turns"] for h in t["execution"]["hooks"]]
    for h in gold["hooks"]:
        h.pop("value")  # trace-level listings carry no stored value
    return gold


def test_hooks_listed_per_turn_and_per_trace_are_counted_once(make: SimpleNamespace) -> None:
    tables, normalizer = run(make, make.episode(gold=both_listings(make)))
    gold = [h for h in rows(tables, "hooks") if h["trace_id"] == "ep-0001:gold"]
    assert [(h["name"], h["listed_in"], h["turn_index"], h["hook_index"]) for h in gold] == [
        ("df", "both", 0, 0),
        ("n", "both", 1, 1),
    ]
    assert gold[1]["value"] == "42" and gold[1]["depends_on"] == ["df"]
    trace = next(r for r in rows(tables, "traces") if r["trace_id"] == "ep-0001:gold")
    assert trace["n_hooks"] == 2 and trace["checks"] == []
    assert normalizer.stats.checks == {}


def test_disagreeing_listings_are_flagged_and_nothing_is_lost(make: SimpleNamespace) -> None:
    gold = both_listings(make)
    gold["hooks"][1]["value_hash"] = value_hash(41)
    gold["hooks"].append(make.hook("only_here", 5, stored=False))
    tables, normalizer = run(make, make.episode(gold=gold))
    hooks = [h for h in rows(tables, "hooks") if h["trace_id"] == "ep-0001:gold"]
    assert [(h["name"], h["listed_in"]) for h in hooks] == [
        ("df", "both"),
        ("n", "both"),
        ("only_here", "trace"),
    ]
    trace = next(r for r in rows(tables, "traces") if r["trace_id"] == "ep-0001:gold")
    assert trace["checks"] == [vocabulary.HOOK_LISTING_MISMATCH]
    assert rows(tables, "episodes")[0]["checks"] == [vocabulary.HOOK_LISTING_MISMATCH]
    assert normalizer.stats.checks == {vocabulary.HOOK_LISTING_MISMATCH: 1}


def test_repeated_hook_names_are_matched_by_occurrence(make: SimpleNamespace) -> None:
    turns = [
        make.turn(0, "x = 1", hooks=[make.hook("x", 1)]),
        make.turn(1, "x = 2", hooks=[make.hook("x", 2)]),
        make.turn(2, "submit(42)", submitted=42),
    ]
    gold = make.turns_trace(42, turns=turns, hooks=[make.hook("x", 1), make.hook("x", 2)])
    tables, _ = run(make, make.episode(gold=gold))
    hooks = [h for h in rows(tables, "hooks") if h["trace_id"] == "ep-0001:gold"]
    assert [(h["turn_index"], h["listed_in"], h["value"]) for h in hooks] == [
        (0, "both", "1"),
        (1, "both", "2"),
    ]
    swapped = make.turns_trace(42, turns=turns, hooks=[make.hook("x", 2), make.hook("x", 1)])
    tables, _ = run(make, make.episode(gold=swapped))
    assert rows(tables, "episodes")[0]["checks"] == [vocabulary.HOOK_LISTING_MISMATCH]


def test_unnamed_hooks_are_named_by_their_code_line(make: SimpleNamespace) -> None:
    """The seeds' capture code wrote ``variable_name: ""`` for a hook without a variable:
    named like a null one, by its code line, so two unnamed hooks are not one name."""
    hooks = [
        make.hook("", 1, code_line="len(df)"),
        make.hook(None, 2, code_line="df.a.sum()"),
        make.hook("x", 3),
    ]
    turns = [make.turn(0, "x = 3", hooks=hooks), make.turn(1, "submit(42)", submitted=42)]
    tables, _ = run(make, make.episode(gold=make.turns_trace(42, turns=turns)))
    gold = [h for h in rows(tables, "hooks") if h["trace_id"] == "ep-0001:gold"]
    assert [(h["name"], h["variable_name"]) for h in gold] == [
        ("len(df)", ""),
        ("df.a.sum()", None),
        ("x", "x"),
    ]
    assert rewards.hook_name({"variable_name": "", "code_line": "len(df)"}) == "len(df)"


def test_a_turn_that_wrote_a_null_answer_did_not_submit(make: SimpleNamespace) -> None:
    """The later capture code writes ``"submitted_answer": null`` on every turn."""
    turns = [make.turn(0, "x = 1"), make.turn(1, "submit(42)", submitted=42)]
    turns[0]["execution"]["submitted_answer"] = None
    tables, _ = run(make, make.episode(gold=make.turns_trace(42, turns=turns)))
    gold = [r for r in rows(tables, "turns") if r["trace_id"] == "ep-0001:gold"]
    assert [(r["submitted"], r["submitted_answer"]) for r in gold] == [(False, None), (True, "42")]


def test_oversized_hook_value_is_bounded_but_hash_kept(make: SimpleNamespace) -> None:
    big = {"rows": list(range(200))}
    turns = [
        make.turn(0, "x = big()", hooks=[make.hook("x", big)]),
        make.turn(1, "submit(42)", submitted=42),
    ]
    tables, normalizer = run(
        make, make.episode(gold=make.turns_trace(42, turns=turns)), hook_value_limit=100
    )
    hook = next(h for h in rows(tables, "hooks") if h["name"] == "x")
    assert hook["value_bounded"] is True
    assert hook["value_hash"] == value_hash(big)
    size = len(canonical_json(big).encode())
    assert json.loads(hook["value"]) == {"size_bytes": size, "truncated": True, "type": "dict"}
    assert normalizer.stats.bounded_hook_values == 1
    small = next(
        h for h in rows(tables, "hooks") if h["name"] == "x" and h["trace_id"].endswith("c0")
    )
    assert small["value_bounded"] is False


# ---------------------------------------------------------------- any-typed values

VALUES = [
    "1",
    1,
    1.0,
    True,
    None,
    0,
    "",
    [],
    {},
    [1, "1", 1.0, None],
    {"b": {"z": 1, "a": [True, "x"]}, "a": -2.5},
    "naïve ☃",
    2**70,
    {"shape": [300, 4], "columns": ["a", "b"], "head": [[1, "x"]]},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_any_typed_values_round_trip(make: SimpleNamespace, value: Any) -> None:
    turns = [
        make.turn(0, "v = f()", hooks=[make.hook("v", value)]),
        make.turn(1, "submit(v)", submitted=value),
    ]
    gold = make.turns_trace(value, turns=turns)
    gold["submission_metadata"] = {"value": value}
    record = make.episode(gold=gold, consistency=[make.flat_trace(value)])
    tables, normalizer = run(make, record)
    assert normalizer.stats.checks == {}  # every stored hash matches its stored value
    expected = normalize_value(value)
    trace = next(r for r in rows(tables, "traces") if r["trace_id"] == "ep-0001:gold")
    submitted = [
        r["submitted_answer"]
        for r in rows(tables, "turns")
        if r["trace_id"] == "ep-0001:gold" and r["submitted"]
    ]
    # A turn's null answer is no submission, as the capture side reads it (and writes it).
    assert len(submitted) == (0 if value is None else 1)
    hook = next(r for r in rows(tables, "hooks") if r["trace_id"] == "ep-0001:gold")
    episode = rows(tables, "episodes")[0]
    for text in (
        trace["final_answer"],
        *submitted,
        hook["value"],
        episode["expected_final_answer"],
    ):
        assert isinstance(text, str)
        assert json.loads(text) == expected
        assert value_hash(json.loads(text)) == value_hash(value)
    assert json.loads(trace["submission_metadata"]) == {"value": expected}


def test_string_one_and_number_one_stay_distinguishable(make: SimpleNamespace) -> None:
    as_text = make.episode("s", gold=make.turns_trace("1"), consistency=[make.flat_trace("1")])
    as_number = make.episode("n", gold=make.turns_trace(1), consistency=[make.flat_trace(1)])
    tables, normalizer = run(make, as_text, as_number)
    assert normalizer.stats.checks == {}
    answers = {
        r["trace_id"]: (r["final_answer"], r["final_answer_hash"]) for r in rows(tables, "traces")
    }
    assert answers["s:gold"] == ('"1"', value_hash("1"))
    assert answers["n:gold"] == ("1", value_hash(1))
    assert answers["s:gold"] != answers["n:gold"]


def test_absent_and_null_answers_differ(make: SimpleNamespace) -> None:
    record = make.episode(consistency=[make.flat_trace(42)])
    record["consistency_traces"][0]["final_answer"] = None
    record["consistency_traces"][0]["final_answer_hash"] = value_hash(None)
    del record["teacher_gold_trace"]["turns"][2]["execution"]["submitted_answer"]
    tables, _ = run(make, record)
    traces = {r["trace_id"]: r for r in rows(tables, "traces")}
    assert traces["ep-0001:c0"]["final_answer"] == "null"
    gold_turns = [r for r in rows(tables, "turns") if r["trace_id"] == "ep-0001:gold"]
    assert [r["submitted"] for r in gold_turns] == [False, False, False]
    assert [r["submitted_answer"] for r in gold_turns] == [None, None, None]
    del record["teacher_gold_trace"]["final_answer"]
    record["teacher_gold_trace"]["final_answer_hash"] = None
    record["verified"] = False
    tables, _ = run(make, record)
    gold = next(r for r in rows(tables, "traces") if r["trace_id"] == "ep-0001:gold")
    assert gold["final_answer"] is None


# ---------------------------------------------------------------- unknown fields


def test_unknown_fields_are_kept_by_json_path_and_counted(make: SimpleNamespace) -> None:
    first = make.episode("ep-1")
    first["capture_version"] = "2.3"
    first["question"]["source_dataset"] = {"name": "sales", "rows": 300}
    first["teacher_gold_trace"]["turns"][1]["latency_ms"] = 812
    first["teacher_gold_trace"]["turns"][1]["execution"]["hooks"][0]["dtype"] = "int64"
    first["consistency_traces"][2]["seed"] = 7
    second = make.episode("ep-2")
    second["teacher_gold_trace"]["turns"][0]["latency_ms"] = 90
    tables, normalizer = run(make, first, second)
    episodes = {r["episode_id"]: r for r in rows(tables, "episodes")}
    assert json.loads(episodes["ep-1"]["extra_fields"]) == {
        "$.capture_version": "2.3",
        "$.question.source_dataset": {"name": "sales", "rows": 300},
        "$.teacher_gold_trace.turns[1].latency_ms": 812,
        "$.teacher_gold_trace.turns[1].execution.hooks[0].dtype": "int64",
        "$.consistency_traces[2].seed": 7,
    }
    assert json.loads(episodes["ep-2"]["extra_fields"]) == {
        "$.teacher_gold_trace.turns[0].latency_ms": 90
    }
    assert normalizer.stats.extra_fields == {
        "$.capture_version": 1,
        "$.question.source_dataset": 1,
        "$.teacher_gold_trace.turns[*].latency_ms": 2,
        "$.teacher_gold_trace.turns[*].execution.hooks[*].dtype": 1,
        "$.consistency_traces[*].seed": 1,
    }


def test_no_unknown_fields_means_null_extra_fields(make: SimpleNamespace) -> None:
    tables, normalizer = run(make, make.episode())
    assert rows(tables, "episodes")[0]["extra_fields"] is None
    assert normalizer.stats.extra_fields == {}


def test_message_extra_fields_and_content_parts(make: SimpleNamespace) -> None:
    record = make.episode()
    record["conversation_for_sft"]["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}},
                {"id": "c2", "function": {"name": "sum", "arguments": {"xs": [1, 2]}}},
            ],
            "refusal": None,
        },
        {"role": "tool", "content": "3", "tool_call_id": "c2", "name": "sum"},
    ]
    tables, _ = run(make, record)
    first, second, third = rows(tables, "messages")
    assert first["content"] is None and json.loads(first["content_parts"]) == [
        {"type": "text", "text": "hi"}
    ]
    assert json.loads(second["tool_calls"]) == [
        {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}},
        # arguments are JSON text, as OpenAI sends them; a missing type is "function"
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "sum", "arguments": '{"xs": [1, 2]}'},
        },
    ]
    assert json.loads(second["extra_fields"]) == {"refusal": None}  # the rest is kept too
    assert (third["tool_call_id"], third["name"], third["extra_fields"]) == ("c2", "sum", None)


# ---------------------------------------------------------------- questions


def test_questions_one_row_per_id_first_source_wins(make: SimpleNamespace) -> None:
    normalizer = Normalizer()
    bank_q = make.question(ground_truth=42, ground_truth_hash=value_hash(42))
    normalizer.question(Question.model_validate(bank_q), "synthetic", "bank.jsonl", 3)
    normalizer.episode(make.valid(make.episode("ep-1", q=bank_q)))
    other = make.question("Mean price?", None)
    normalizer.episode(make.valid(make.episode("ep-2", q=other)))
    normalizer.episode(make.valid(make.episode("ep-3", q=other)))
    questions = {r["question_id"]: r for r in rows(normalizer.take_tables(), "questions")}
    assert len(questions) == 2
    first = questions[bank_q["id"]]
    assert (first["source"], first["source_file"], first["source_line"]) == (
        "synthetic",
        "bank.jsonl",
        3,
    )
    assert (
        first["ground_truth"] == "42" and first["normalized_text"] == first["question_text"].lower()
    )
    assert questions[other["id"]]["source"] == "episode"
    assert questions[other["id"]]["ground_truth"] is None


@pytest.mark.parametrize(
    ("captured", "stored"),
    [
        ("MEDIUM", "MEDIUM"),
        ("medium", "MEDIUM"),
        (" Very hard ", "VERY_HARD"),
        ("very-hard", "VERY_HARD"),
        ("moderate", "moderate"),  # not one of the four: kept as the capture wrote it
        (None, None),
    ],
)
def test_a_difficulty_in_any_spelling_is_accepted(
    make: SimpleNamespace, captured: str | None, stored: str | None
) -> None:
    # The capture code types difficulty a free string, copied from the question generator.
    q = make.question()
    q["difficulty"] = captured
    tables, _ = run(make, make.episode(q=q))
    (row,) = rows(tables, "questions")
    assert row["difficulty"] == stored and row["checks"] == []


def test_a_wrong_question_id_is_the_episodes_check_and_the_row_keeps_its_address(
    make: SimpleNamespace,
) -> None:
    """A captured id that is not the content address flags its episode (which does not
    train); the question row and the episode are keyed by the content address, so the
    wrong id never names the row of the question it happens to be."""
    q = make.question()
    q["id"] = "f" * 16
    tables, normalizer = run(make, make.episode(q=q))
    (row,) = rows(tables, "questions")
    address = question_id(q["question_text"], q["hint"])
    assert (row["question_id"], row["checks"]) == (address, [])
    assert normalizer.stats.question_checks == {vocabulary.QUESTION_ID_MISMATCH: 1}
    (episode,) = rows(tables, "episodes")
    assert (episode["question_id"], episode["checks"]) == (
        address,
        [vocabulary.QUESTION_ID_MISMATCH],
    )


def test_an_episode_naming_another_questions_id_does_not_take_its_row(
    make: SimpleNamespace,
) -> None:
    """Episode B carries question C's text under question A's id, and comes first: A's
    episode keeps A's text (its prompt) and B joins C's question, whose text it has."""
    a = make.question("How many rows have price > 100?", "Filter, then count.")
    c = make.question("What is the mean price?", "Average the price column.")
    b = {**c, "id": a["id"]}
    first = make.episode("ep-b", q=b)
    tables, _ = run(make, first, make.episode("ep-a", q=a), make.episode("ep-c", q=c))
    texts = {r["question_id"]: r["question_text"] for r in rows(tables, "questions")}
    assert texts == {a["id"]: a["question_text"], c["id"]: c["question_text"]}
    keyed = {r["episode_id"]: (r["question_id"], r["checks"]) for r in rows(tables, "episodes")}
    assert keyed == {
        "ep-b": (c["id"], [vocabulary.QUESTION_ID_MISMATCH]),
        "ep-a": (a["id"], []),
        "ep-c": (c["id"], []),
    }


def test_flagged_episode_is_kept_with_its_checks(make: SimpleNamespace) -> None:
    record = make.episode(consistency=[make.flat_trace(7), make.flat_trace(7)], verified=True)
    tables, normalizer = run(make, record)
    (episode,) = rows(tables, "episodes")
    assert episode["verified"] is True and episode["verified_recomputed"] is False
    assert episode["checks"] == [vocabulary.VERIFIED_MISMATCH]
    assert normalizer.stats.checks == {vocabulary.VERIFIED_MISMATCH: 1}


# ---------------------------------------------------------------- mark / rollback


def test_rollback_restores_rows_and_seen_questions(make: SimpleNamespace) -> None:
    normalizer = Normalizer()
    normalizer.episode(make.valid(make.episode("keep")))
    mark = normalizer.mark()
    new_q = make.question("A brand new question?", None)
    normalizer.episode(make.valid(make.episode("drop", q=new_q)))
    normalizer.rollback(mark)
    assert normalizer.mark() == mark
    # the rolled-back question is not "seen": a later episode adds it again
    normalizer.episode(make.valid(make.episode("later", q=new_q)))
    tables = normalizer.take_tables()
    assert [r["episode_id"] for r in rows(tables, "episodes")] == ["keep", "later"]
    assert {r["question_id"] for r in rows(tables, "questions")} == {
        make.question()["id"],
        new_q["id"],
    }
    for name in ("traces", "turns", "hooks", "messages"):
        assert "drop" not in {r["episode_id"] for r in rows(tables, name)}, name
    reference, _ = run(make, make.episode("keep"), make.episode("later", q=new_q))
    for name in TABLES:
        drop_ids = ("source_line",)  # line numbers differ from the reference run
        got = tables[name].drop_columns([c for c in drop_ids if c in tables[name].column_names])
        want = reference[name].drop_columns(
            [c for c in drop_ids if c in reference[name].column_names]
        )
        assert got.equals(want), name


def test_take_tables_resets_the_buffer(make: SimpleNamespace) -> None:
    normalizer = Normalizer()
    normalizer.episode(make.valid(make.episode()))
    assert normalizer.take_tables()["episodes"].num_rows == 1
    assert all(t.num_rows == 0 for t in normalizer.take_tables().values())


# ---------------------------------------------------------------- schemas and keys


def test_tables_conform_to_the_declared_schemas_and_keys_join(make: SimpleNamespace) -> None:
    turns = [
        make.turn(0, "bad()", success=False, stderr="NameError"),
        make.turn(1, "good()", correction=make.correction(0), hooks=[make.hook("g", [1, 2])]),
        make.turn(2, "submit(42)", submitted=42),
    ]
    tables, _ = run(
        make,
        make.episode("ep-1"),
        make.episode("ep-2", gold=make.turns_trace(42, turns=turns)),
        make.episode("ep-3", gold=make.flat_trace(42), consistency=[]),
    )
    assert set(tables) == set(TABLES)
    for name, table in tables.items():
        assert table.schema.equals(TABLES[name], check_metadata=True), name
        for field in table.schema:
            if not field.nullable:
                assert table.column(field.name).null_count == 0, (name, field.name)

    def keys(name: str, *cols: str) -> list[tuple[Any, ...]]:
        return [tuple(r[c] for c in cols) for r in rows(tables, name)]

    trace_ids = {k for (k,) in keys("traces", "trace_id")}
    episode_ids = {k for (k,) in keys("episodes", "episode_id")}
    assert len(trace_ids) == tables["traces"].num_rows
    for name, pk in (("turns", ("trace_id", "turn_index")), ("hooks", ("trace_id", "hook_index"))):
        assert len(set(keys(name, *pk))) == tables[name].num_rows, name
        assert {k[0] for k in keys(name, *pk)} <= trace_ids, name
    assert {k for (k,) in keys("traces", "episode_id")} == episode_ids
    assert {k for (k,) in keys("episodes", "question_id")} <= {
        k for (k,) in keys("questions", "question_id")
    }
    assert keys("corrections", "trace_id", "turn_index") == [("ep-2:gold", 1)]
    assert set(keys("corrections", "trace_id", "turn_index")) <= set(
        keys("turns", "trace_id", "turn_index")
    )


def test_naive_timestamps_are_read_as_utc(make: SimpleNamespace) -> None:
    record = make.episode()
    record["timestamp"] = "2025-12-21T16:00:00"
    other = make.episode("ep-2")
    other["timestamp"] = "2025-12-21T18:00:00+02:00"
    tables, _ = run(make, record, other)
    stamps = tables["episodes"].column("timestamp").to_pylist()
    assert stamps[0] == stamps[1]
    assert str(stamps[0].tzinfo) == "UTC"


def test_rollback_forgets_what_the_rolled_back_episode_taught(make: SimpleNamespace) -> None:
    """A rolled-back (``--strict`` rejected) line must not influence later lines: the ground
    truth its question carried is dropped with it."""
    normalizer = Normalizer()
    mark = normalizer.mark()
    wrong = make.question(ground_truth_hash=value_hash(41))
    assert normalizer.episode(make.valid(make.episode("rejected", q=wrong))) == [
        vocabulary.GROUND_TRUTH_MISMATCH
    ]
    normalizer.rollback(mark)
    assert normalizer.ground_truth == {}
    assert normalizer.episode(make.valid(make.episode("clean", q=make.question()))) == []


def test_a_bank_ground_truth_whose_hash_is_wrong_judges_no_episode(
    make: SimpleNamespace,
) -> None:
    """The bank row is flagged ``ground_truth_mismatch``; which of its two fields is wrong is
    not known, so its hash fails no episode (one answering the ground truth would fail) and
    passes none."""
    record = make.episode()
    answer = record["teacher_gold_trace"]["final_answer"]
    bank = {**record["question"], "ground_truth": answer, "ground_truth_hash": "0" * 16}
    normalizer = Normalizer()
    failed = normalizer.question(Question.model_validate(bank), "synthetic", "bank.jsonl", 1)
    assert failed == [vocabulary.GROUND_TRUTH_MISMATCH]
    assert normalizer.episode(make.valid(record)) == []
    truthful = {**bank, "ground_truth_hash": value_hash(answer)}
    other = Normalizer()
    other.question(Question.model_validate(truthful), "synthetic", "bank.jsonl", 1)
    wrong = make.copy(record)
    wrong["teacher_gold_trace"]["final_answer_hash"] = value_hash("another answer")
    assert vocabulary.GROUND_TRUTH_MISMATCH in other.episode(make.valid(wrong))


def test_question_checks_handed_in_are_those_checked_here(make: SimpleNamespace) -> None:
    """The ingest checks an episode's question once, for its episode and for its question's
    row: handed in, the checks give the rows (and failed checks) they give when checked here,
    for a question that passes and one that fails."""
    from builder.normalize.checks import check_question
    from builder.normalize.episode import emit_episode
    from builder.normalize.questions import question_row
    from builder.normalize.rows import empty_rows

    good = make.episode("ep-1")
    bad = make.episode("ep-2")
    bad["question"]["id"] = "0123456789abcdef"
    bad["question"]["ground_truth_hash"] = "0" * 16
    for record in (good, bad):
        ep = make.valid(record).record
        checked = check_question(ep.question, None)
        out_here, out_given = empty_rows(), empty_rows()
        here = emit_episode(ep, "f", 1, 100, out_here)
        given = emit_episode(ep, "f", 1, 100, out_given, question_checks=checked)
        assert here == given and out_here == out_given
        assert question_row(ep.question, "episode", "f", 1) == question_row(
            ep.question, "episode", "f", 1, None, checked
        )
    assert check_question(make.valid(bad).record.question, None)  # the failing case fails
