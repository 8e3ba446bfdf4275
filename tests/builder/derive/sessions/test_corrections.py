"""Self-correction rows from sessions: failed code, its error, the next code that fixes it."""

from __future__ import annotations

from itertools import pairwise

import polars as pl
from sessions_support import ERROR, Backend, action, expected_messages, load, session

from builder.derive.sessions.corrections import SELF_CORRECTION_COLUMNS, self_corrections
from builder.derive.sessions.replay import ReplayOptions
from builder.sessions.read import read_source
from builder.sessions.validate import Validated, validate_source


def test_self_correction_from_the_hand_written_session(backend: Backend) -> None:
    rows = self_corrections(load(backend))
    assert rows.schema == pl.Schema(SELF_CORRECTION_COLUMNS)
    assert rows.height == 1
    row = rows.row(0, named=True)
    full = expected_messages(fix_weight=1, merged=True)  # user messages in a row are one
    assert row | {"prompt": None, "completion": None, "messages": None} == {
        "question_id": row["question_id"],
        "episode_id": None,
        "trace_id": None,
        "session_id": 1,
        "difficulty": None,
        "source": "session",
        "trace_role": None,
        "turn_index": 70,
        "corrects_turn": 40,
        "failed_code": "df['Price'].mean()",
        "error_feedback": ERROR,
        "fixed_code": "df['price'].mean()",
        "code_diff": {
            "removed_lines": ["df['Price'].mean()"],
            "added_lines": ["df['price'].mean()"],
        },
        "error_type": "KeyError",
        "error_message": "'Price'",
        "prompt": None,
        "completion": None,
        "messages": None,
    }
    # The prompt runs up to the fix: the error feedback and the instruction typed after it.
    unweighted = [{"role": m["role"], "content": m["content"]} for m in full]
    assert row["prompt"] == unweighted[:6]
    assert row["completion"] == [unweighted[6]]
    weights = [m["weight"] for m in row["messages"]]
    assert weights == [None, None, 0, None, 0, None, 1]


def _one_session(backend: Backend, actions: list[tuple[object, ...]]) -> Validated:
    backend.create("strict")
    backend.insert("sessions", [session(1, "Sum it.")])
    backend.insert("actions", actions)
    return validate_source(read_source(backend.url))


def _pairs(backend: Backend, actions: list[tuple[object, ...]]) -> list[tuple[int, int]]:
    rows = self_corrections(_one_session(backend, actions))
    return list(zip(rows["corrects_turn"].to_list(), rows["turn_index"].to_list(), strict=True))


def test_no_pair_unless_failed_marked_errored_and_fixed(backend: Backend) -> None:
    failing = "Traceback (most recent call last):\nZeroDivisionError: division by zero"
    assert _pairs(
        backend,
        [
            # marked incorrect but its output is no error: not a self-correction
            action("a", 1, 1, "set_code", "1 + 1", False, "ai"),
            action("b", 1, 2, "set_exec_output", "2", None, "ai"),
            # errors but is not marked incorrect: not one either
            action("c", 1, 3, "set_code", "1 / 0", None, "ai"),
            action("d", 1, 4, "set_exec_output", failing, None, "ai"),
            # marked, errors; the next code errors too: no pair for 5, but 7 is fixed by 9
            action("e", 1, 5, "set_code", "1 / 0", False, "ai"),
            action("f", 1, 6, "set_exec_output", failing, None, "ai"),
            action("g", 1, 7, "set_code", "1 // 0", False, "ai"),
            action("h", 1, 8, "set_exec_output", failing, None, "ai"),
            action("i", 1, 9, "set_code", "1 // 1", None, "ai"),
            action("j", 1, 10, "set_exec_output", "1", None, "ai"),
            # marked, errors; the next code is never run and not marked correct: no pair
            action("k", 1, 11, "set_code", "x", False, "ai"),
            action("l", 1, 12, "set_exec_output", "NameError: name 'x' is not defined", None, "ai"),
            action("m", 1, 13, "set_code", "y", None, "ai"),
        ],
    ) == [(7, 9)]


def test_unrun_fix_counts_when_marked_correct(backend: Backend) -> None:
    assert _pairs(
        backend,
        [
            action("k", 1, 1, "set_code", "x", False, "ai"),
            action("l", 1, 2, "set_exec_output", "NameError: name 'x' is not defined", None, "ai"),
            action("m", 1, 3, "set_code", "x = 1", True, "ai"),
        ],
    ) == [(1, 3)]


def test_code_replaced_before_it_ran_is_not_in_the_prompt(backend: Backend) -> None:
    # An edit replaced by the next edit never ran: the prompt shows the code that did, so
    # assistant turns never follow each other (chat templates that require alternation).
    validated = _one_session(
        backend,
        [
            action("a", 1, 1, "set_code", "import pandas as pd", None, "ai"),
            action("b", 1, 2, "set_code", "df['Price'].mean()", False, "ai"),
            action("c", 1, 3, "set_exec_output", ERROR, None, "ai"),
            action("d", 1, 4, "set_code", "df['price'].mean()", None, "ai"),
            action("e", 1, 5, "set_exec_output", "3.5", None, "ai"),
        ],
    )
    rows = self_corrections(validated)
    assert rows.height == 1
    row = rows.row(0, named=True)
    roles = [m["role"] for m in row["prompt"]] + [m["role"] for m in row["completion"]]
    assert all(a != b for a, b in pairwise(roles)), roles
    code = [m for m in row["messages"] if m["role"] == "assistant"]
    assert [m["weight"] for m in code] == [0, 1]
    assert "import pandas as pd" not in str(row["messages"])
    assert code[0]["content"] == "```python\ndf['Price'].mean()\n```"
    assert code[1]["content"].count("df['price'].mean()") == 1
    assert row["completion"] == [{"role": "assistant", "content": code[1]["content"]}]


def test_code_replaced_before_it_ran_after_a_reply_is_no_fix(backend: Backend) -> None:
    # failed code, then an edit the human rejects before it runs, then the fix that ran:
    # the pair is the failure and the fix; the rejected edit is context (weight 0)
    validated = _one_session(
        backend,
        [
            action("a", 1, 1, "set_code", "df['A'].sum()", False, "ai"),
            action("b", 1, 2, "set_exec_output", ERROR, None, "dataset"),
            action("c", 1, 3, "set_code", "df['a'].summ()", None, "ai"),
            action("d", 1, 4, "input", "no, summ is a typo", None, "human"),
            action("e", 1, 5, "set_code", "df['a'].sum()", None, "ai"),
            action("f", 1, 6, "set_exec_output", "42", None, "dataset"),
        ],
    )
    rows = self_corrections(validated)
    assert rows.select("corrects_turn", "turn_index").rows() == [(1, 5)]
    row = rows.row(0, named=True)
    code = [m for m in row["messages"] if m["role"] == "assistant"]
    assert [m["weight"] for m in code] == [0, 0, 1]
    assert row["fixed_code"] == "df['a'].sum()"


def test_an_error_name_printed_before_more_output_is_no_error(backend: Backend) -> None:
    # Nothing runs after an uncaught error: an ``XxxError:`` line followed by more output is
    # something the code printed (a metric's name), not an error.
    metric = "MeanSquaredError: 0.5\nR2: 0.91"
    assert _pairs(
        backend,
        [
            # marked incorrect, but its output only names a metric: no pair
            action("a", 1, 1, "set_code", "report(model)", False, "ai"),
            action("b", 1, 2, "set_exec_output", metric, None, "ai"),
            action("c", 1, 3, "set_code", "report(model, digits=3)", None, "ai"),
            action("d", 1, 4, "set_exec_output", "ok", None, "ai"),
            # a real error, fixed by code whose output prints such a metric: a pair
            action("e", 1, 5, "set_code", "fit(X)", False, "ai"),
            action("f", 1, 6, "set_exec_output", "ValueError: X is empty\n", None, "ai"),
            action("g", 1, 7, "set_code", "fit(X_train)", None, "ai"),
            action("h", 1, 8, "set_exec_output", metric, None, "ai"),
        ],
    ) == [(5, 7)]


def test_the_fix_trains_as_in_sft(backend: Backend) -> None:
    # With null_correct_trains = false an unmarked fix is not trained in sft: nor here.
    validated = _one_session(
        backend,
        [
            action("a", 1, 1, "set_code", 'df["region"]', False, "ai"),
            action("b", 1, 2, "set_exec_output", "KeyError: 'region'", None, "ai"),
            action("c", 1, 3, "set_code", 'df["Region"]', None, "ai"),
            action("d", 1, 4, "set_exec_output", "East 3", None, "ai"),
        ],
    )
    assert self_corrections(validated).height == 1
    strict = ReplayOptions(null_correct_trains=False)
    assert self_corrections(validated, strict).height == 0


def test_the_output_of_a_run_is_its_last(backend: Backend) -> None:
    # Each set_exec_output replaces the output: "running..." then a traceback is an error;
    # an error then a clean re-run of the same code is not.
    assert _pairs(
        backend,
        [
            action("a", 1, 1, "set_code", "A", False, "ai"),
            action("b", 1, 2, "set_exec_output", "running...", None, "ai"),
            action("c", 1, 3, "set_exec_output", ERROR, None, "ai"),
            action("d", 1, 4, "set_code", "B", True, "ai"),
            action("e", 1, 5, "set_exec_output", "ok", None, "ai"),
            action("f", 1, 6, "set_code", "C", False, "ai"),
            action("g", 1, 7, "set_exec_output", ERROR, None, "ai"),
            action("h", 1, 8, "set_exec_output", "ok", None, "ai"),
            action("i", 1, 9, "set_code", "D", True, "ai"),
            action("j", 1, 10, "set_exec_output", "ok", None, "ai"),
        ],
    ) == [(1, 4)]
