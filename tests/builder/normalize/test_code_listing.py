"""A trace that gives its code in both forms, ``code_cells`` and ``turns``: when the two
agree nothing changes; when they disagree the trace's code is unknown, so the episode fails
``code_listing_mismatch``, trains nowhere, and ``--strict`` names the cells that disagree."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from builder.derive.eligibility import HOOK_CHECKS, exclusion_reasons, sound_episodes
from builder.normalize import Normalizer
from builder.normalize.explain import explain_line
from samples.variants import to_capture_v2
from schemas import vocabulary

KIND = "code_listing_mismatch"


def both_forms(make: SimpleNamespace, cells: list[str] | None = None) -> dict[str, Any]:
    """The default turns trace, with ``code_cells`` (its turns' code unless given)."""
    gold = make.turns_trace(42)
    gold["code_cells"] = [t["code"] for t in gold["turns"]] if cells is None else cells
    return gold


def run(make: SimpleNamespace, *records: dict[str, Any]) -> tuple[dict[str, Any], Normalizer]:
    normalizer = Normalizer()
    for i, record in enumerate(records, start=1):
        normalizer.episode(make.valid(record, number=i))
    return normalizer.take_tables(), normalizer


def test_the_check_is_defined_once_with_its_meaning() -> None:
    assert vocabulary.CODE_LISTING_MISMATCH == KIND
    assert "code_cells" in vocabulary.MEANINGS[KIND]
    assert KIND not in HOOK_CHECKS  # a general check: the trace's content is unknown


def test_forms_that_agree_change_nothing(make: SimpleNamespace) -> None:
    plain, both = make.episode("ep-1"), make.episode("ep-2", gold=both_forms(make))
    tables, normalizer = run(make, plain, both)
    assert normalizer.stats.checks == {}
    turns = tables["turns"].to_pylist()
    codes = {
        eid: [r["code"] for r in turns if r["trace_id"] == f"{eid}:gold"]
        for eid in ("ep-1", "ep-2")
    }
    assert (
        codes["ep-1"] == codes["ep-2"] == [t["code"] for t in plain["teacher_gold_trace"]["turns"]]
    )
    forms = {r["trace_id"]: r["form"] for r in tables["traces"].to_pylist()}
    assert forms["ep-1:gold"] == forms["ep-2:gold"] == "turns"


@pytest.mark.parametrize(
    "cells",
    [
        ["x = 1", "y = 2", "submit(y)"],  # other code, as many cells as turns
        ["df = pd.read_csv('sales.csv')"],  # fewer cells
        None,  # more cells: the turns' code and one more
        "swapped",  # the same code, in another order
    ],
    ids=["other-code", "fewer-cells", "more-cells", "other-order"],
)
def test_forms_that_disagree_fail_the_check(make: SimpleNamespace, cells: Any) -> None:
    gold = both_forms(make)
    if cells is None:
        gold["code_cells"].append("print('never ran')")
    elif cells == "swapped":
        gold["code_cells"][0], gold["code_cells"][1] = gold["code_cells"][1], gold["code_cells"][0]
    else:
        gold["code_cells"] = cells
    tables, normalizer = run(make, make.episode("ep-1", gold=gold))
    assert normalizer.stats.checks == {KIND: 1}
    traces = {r["trace_id"]: r["checks"] for r in tables["traces"].to_pylist()}
    assert traces["ep-1:gold"] == [KIND]
    assert tables["episodes"].to_pylist()[0]["checks"] == [KIND]


def test_a_consistency_trace_in_both_forms_is_held_to_them_too(make: SimpleNamespace) -> None:
    record = make.episode("ep-1")
    record["consistency_traces"][0]["turns"] = [make.turn(0, "x = 1"), make.turn(1, "submit(x)")]
    assert Normalizer().episode(make.valid(record)) == [KIND]
    record["consistency_traces"][0]["code_cells"] = ["x = 1", "submit(x)"]
    assert Normalizer().episode(make.valid(record)) == []


def test_empty_turns_beside_code_cells_are_a_flat_trace(make: SimpleNamespace) -> None:
    record = make.episode("ep-1", gold=make.flat_trace(42) | {"turns": []})
    assert Normalizer().episode(make.valid(record)) == []


def test_an_episode_whose_forms_disagree_trains_nowhere() -> None:
    episodes = pl.LazyFrame(
        {
            "episode_id": ["clean", "mixed", "hooks"],
            "verified": [True, True, True],
            "verified_recomputed": [True, True, True],
            "checks": [[], [KIND], [vocabulary.HOOK_CYCLE]],
        }
    )
    turns = pl.LazyFrame(
        {"trace_id": ["clean:gold"], "turn_index": [0], "episode_id": ["clean"]},
        schema={"trace_id": pl.String, "turn_index": pl.Int32, "episode_id": pl.String},
    )
    tables = {"episodes": episodes, "turns": turns}
    for hooks in (False, True):
        reasons = dict(exclusion_reasons(tables, hooks).collect().iter_rows())
        assert reasons["clean"] is None
        assert reasons["mixed"] == vocabulary.FAILED_CHECKS  # in every config, not hooks only
        assert reasons["hooks"] == (vocabulary.FAILED_HOOK_CHECKS if hooks else None)
    assert "mixed" not in sound_episodes(tables).collect()["episode_id"].to_list()  # nor prm


def placed(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in explain_line(json.dumps(record).encode(), [KIND], None)]


def test_strict_names_each_cell_that_disagrees(make: SimpleNamespace) -> None:
    gold = both_forms(make, ["df = pd.read_csv('sales.csv')", "n = 0", "submit(n)", "x = 1"])
    record = make.episode("e", gold=gold)
    record["consistency_traces"][1]["turns"] = [make.turn(0, "y = 2")]
    long = "z = 1\n" * 20
    record["consistency_traces"][1]["code_cells"] = [long]
    turn1 = gold["turns"][1]["code"]
    assert placed(record) == [
        (
            "$.teacher_gold_trace.code_cells[1]",
            f"{KIND}: 'n = 0' here, turns[1].code is {turn1!r}",
        ),
        (
            "$.teacher_gold_trace.code_cells[3]",
            f"{KIND}: 'x = 1' is the code of no turn (turns lists 3)",
        ),
        (
            "$.consistency_traces[1].code_cells[0]",
            f"{KIND}: {long[:59] + '…'!r} here, turns[0].code is 'y = 2'",
        ),
    ]
    short = both_forms(make, ["df = pd.read_csv('sales.csv')"])
    assert placed(make.episode("e", gold=short))[1:] == [
        (
            "$.teacher_gold_trace.turns[2].code",
            f"{KIND}: {short['turns'][2]['code']!r} is in no code cell (code_cells lists 1)",
        ),
    ]


def test_strict_names_the_cell_as_the_later_layout_spells_it(make: SimpleNamespace) -> None:
    line = to_capture_v2(make.episode("e", gold=both_forms(make, ["x = 1"])))
    paths = [path for path, _ in placed(line)]
    assert paths == [
        "$.gold_trace.code_cells[0]",
        "$.gold_trace.turns[1].code",
        "$.gold_trace.turns[2].code",
    ]
