"""``builder.contract.answers``: answers compared by value within a float tolerance, as the capture
code compares them when it verifies."""

from __future__ import annotations

from typing import Any

import pytest

from builder.contract.answers import answers_match, majority

MATCH = [
    (54.36, 54.3249),
    (54.36, 54.29),
    (42, 42.05),
    (True, 1),
    ("t‐test", "t-test"),  # a Unicode hyphen
    ("ﬁve", "five"),  # NFKC
    ([1.0, "a"], [1.04, "a"]),
    (["b", "a"], ["a", "b"]),  # strings: in any order
    ({"mean": 4.6, "n": 10}, {"mean": 4.65, "n": 10}),
    (None, None),
]
DIFFER = [
    (54.36, 54.2),
    (float("nan"), float("nan")),  # NaN ≠ NaN on the capture side
    (float("inf"), float("inf")),
    ("a", "A"),
    ([1, 2], [2, 1]),  # numbers keep their order
    ([1], [1, 1]),
    ({"mean": 4.6}, {"mean": 4.6, "n": 1}),
    ({"mean": 4.6}, 4.6),
    ("1", 1),
    (None, 0),
]


@pytest.mark.parametrize(("a", "b"), MATCH, ids=repr)
def test_answers_that_match_within_the_tolerance(a: Any, b: Any) -> None:
    assert answers_match(a, b, 0.1) and answers_match(b, a, 0.1)


@pytest.mark.parametrize(("a", "b"), DIFFER, ids=repr)
def test_answers_that_do_not(a: Any, b: Any) -> None:
    assert not answers_match(a, b, 0.1) and not answers_match(b, a, 0.1)


def test_a_zero_tolerance_is_equality_of_numbers() -> None:
    assert answers_match(2, 2.0, 0.0) and not answers_match(2, 2.01, 0.0)


def test_the_majority_is_the_largest_cluster_of_first_answers() -> None:
    # 54.33 joins 54.36's cluster; 54.2 is too far from 54.36 though close to 54.29,
    # which joined the first cluster: clusters keep their first answer.
    assert majority([54.36, 54.33, 54.2, 54.29], 0.1) == (0, 3)
    assert majority([1, 2, 2, 1], 0.1) == (0, 2)  # a tie: the earliest cluster
    assert majority([float("nan"), float("nan")], 0.1) == (0, 1)  # NaN joins nothing
    assert majority([], 0.1) is None
