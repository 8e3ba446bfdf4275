"""Hashes of live answers and hooks as the capture side records them, in its three eras.

Every hash below was computed with the capture code itself (thajpo/csv-agent): its sandbox's
``hook()`` and ``submit()`` run on the live value, and the host's hash of the answer it read
back from ``submit``'s JSON line. Eras: the seeds' (6674672, exact scheme, every Series of
several values a dict), the exact scheme after the Series rule changed (22cb1ab), and the
contract package's rounded scheme (12eae6b, precision 2). ``None``: the capture side raised
(``hook()`` sorts keys that cannot be sorted).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from builder.contract.hashing import (
    EXACT,
    ROUNDED,
    Submitted,
    answer_hashes,
    hook_hashes,
    submitted_forms,
    value_hash,
)
from builder.contract.rewards import outcome_reward, process_reward

FRAME = pd.DataFrame(
    {"k": [1, 2, 2, 10, 10, 10, 3, 3, 3, 3], "v": [0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9.25]}
)

# expression, then (answer hash, hook hash) for the seeds, 22cb1ab and 12eae6b.
VECTORS = [
    ("df['k'].value_counts()", "1049c00c55867408", "af372839fe567721", "1049c00c55867408", "af372839fe567721", "1049c00c55867408", "af372839fe567721"),
    ("df.groupby('k')['v'].sum()", "e6481439e2f194f6", "0596cc30632b3fb6", "e6481439e2f194f6", "0596cc30632b3fb6", "e6481439e2f194f6", "0596cc30632b3fb6"),
    ("pd.Series([5, 7], index=[2, 10])", "1f8b21a8373a2f00", "4e4d756e4c27c883", "1f8b21a8373a2f00", "4e4d756e4c27c883", "1f8b21a8373a2f00", "4e4d756e4c27c883"),
    ("pd.Series([1.25, 2.5])", "4899954d8a845389", "4899954d8a845389", "c7c01b8e73acfa56", "c7c01b8e73acfa56", "c7c01b8e73acfa56", "c7c01b8e73acfa56"),
    ("pd.Series([0.5 * i for i in range(12)])", "44e7c4c47687de8c", "725c47714198c7e2", "9629787b1b92e8eb", "9629787b1b92e8eb", "9629787b1b92e8eb", "9629787b1b92e8eb"),
    ("pd.DataFrame({'k': [10, 2], 'v': [1.5, 2.5]})", "4b577cbce574e495", "43370c313c06902f", "4b577cbce574e495", "43370c313c06902f", "4b577cbce574e495", "43370c313c06902f"),
    ("{'x': np.float32(54.321)}", "cc267ff925ee123e", "cc267ff925ee123e", "cc267ff925ee123e", "cc267ff925ee123e", "ee80d3bc97f92651", "cc267ff925ee123e"),
    ("pd.Series([np.float32(54.321), 1.0])", "1ac70875719a6c41", "1ac70875719a6c41", "fdbca75cffecd675", "fdbca75cffecd675", "d34f4bcdfe3dcfca", "d34f4bcdfe3dcfca"),
    ("{'significant': np.float64(0.01) < 0.05, 'p_value': 0.01}", "e5b930e86a2e142d", "e5b930e86a2e142d", "e5b930e86a2e142d", "e5b930e86a2e142d", "02751376035991f2", "02751376035991f2"),
    ("pd.DataFrame({'a': [True, False]})", "180c67426bd12add", "180c67426bd12add", "180c67426bd12add", "180c67426bd12add", "180c67426bd12add", "180c67426bd12add"),
    ("{3: 'c', 10: 'a', 'b': 2}", "b8f1613e014bce9e", None, "b8f1613e014bce9e", None, "b8f1613e014bce9e", None),
    ("{1.5: 'x', True: 'y', None: 'z'}", "ae5fcbf0bae2302f", None, "ae5fcbf0bae2302f", None, "ae5fcbf0bae2302f", None),
    ("54.321", "d8427dc3117e6a19", "d8427dc3117e6a19", "d8427dc3117e6a19", "d8427dc3117e6a19", "de02ffdce268a89f", "de02ffdce268a89f"),
    ("[np.int64(3), (1, 2)]", "01b30b6efa0778af", "01b30b6efa0778af", "01b30b6efa0778af", "01b30b6efa0778af", "01b30b6efa0778af", "01b30b6efa0778af"),
]  # fmt: skip
ERAS = [("seeds", None, 1), ("22cb1ab", None, 3), ("12eae6b", 2, 5)]


def live(expression: str) -> Any:
    return eval(expression, {"pd": pd, "np": np, "df": FRAME})


def cases() -> list[Any]:
    return [
        pytest.param(row[0], precision, row[i], row[i + 1], id=f"{era}:{row[0][:40]}")
        for row in VECTORS
        for era, precision, i in ERAS
    ]


@pytest.mark.parametrize(("expression", "precision", "answer", "hook"), cases())
def test_live_values_hash_as_the_capture_side_recorded_them(
    expression: str, precision: int | None, answer: str, hook: str | None
) -> None:
    value = live(expression)
    assert answer in answer_hashes(value, precision)
    assert outcome_reward(value, answer, precision) == 1.0
    if hook is None:
        assert hook_hashes(value, precision) == frozenset()
    else:
        assert hook in hook_hashes(value, precision)
        gold = [{"name": "h", "value_hash": hook, "depends_on": []}]
        assert process_reward([{"value": value}], gold, precision).reward == 1.0


@pytest.mark.parametrize(("expression", "precision", "answer", "hook"), cases())
def test_a_submitted_answer_from_another_process_hashes_alike(
    expression: str, precision: int | None, answer: str, hook: str | None
) -> None:
    forms = json.loads(json.dumps(submitted_forms(live(expression))))
    submitted = Submitted({scheme: tuple(texts) for scheme, texts in forms.items()})
    assert answer_hashes(submitted, precision) == answer_hashes(live(expression), precision)


def test_integer_labels_are_strings_once_submitted() -> None:
    series = pd.Series([5, 7], index=[2, 10])
    # The live value sorts its keys as numbers; what the host reads back, as strings.
    assert value_hash(series) != value_hash({"10": 7, "2": 5})
    assert answer_hashes(series) == {value_hash({"10": 7, "2": 5})}
    assert json.loads(submitted_forms(series)[ROUNDED][0]) == {"2": 5, "10": 7}


def test_only_the_seeds_series_rule_adds_a_second_form() -> None:
    ranged = pd.Series([1.25, 2.5])
    assert len(submitted_forms(ranged)[EXACT]) == 2
    assert len(submitted_forms(ranged)[ROUNDED]) == 1
    assert len(submitted_forms(pd.Series([1.25, 2.5], index=["a", "b"]))[EXACT]) == 1
    # A plain dict is no Series: it never takes the list's hash, nor the list the dict's.
    assert outcome_reward({"0": 1.25, "1": 2.5}, value_hash([1.25, 2.5])) == 0.0
    assert outcome_reward([1.25, 2.5], value_hash({"0": 1.25, "1": 2.5})) == 0.0


def test_an_answer_json_cannot_write_has_no_hash() -> None:
    assert answer_hashes({(1, 2): 3}) == frozenset()
    assert outcome_reward({(1, 2): 3}, value_hash("{(1, 2): 3}")) == 0.0
    assert submitted_forms({(1, 2): 3}) == {EXACT: (), ROUNDED: ()}
