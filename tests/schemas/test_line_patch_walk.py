"""``line_patch`` compares each sub-tree before it descends into it: the same edits as a walk
that descends into every one, on random trees with NaN, bounded values, ``true``/``1``,
missing and extra keys."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from schemas.lines import Bounded, _unmarked, line_patch, path_text, same


def _reference(built: Any, line: Any, path: list[Any], ops: list[Any], lost: dict) -> None:
    if built == line:
        return
    if isinstance(built, Bounded):
        lost[str(path)] = lost.get(str(path), 0) + 1
    elif isinstance(built, dict) and isinstance(line, dict):
        ops.extend([[*path, key]] for key in built if key not in line)
        for key, value in line.items():
            if key in built:
                _reference(built[key], value, [*path, key], ops, lost)
            else:
                ops.append([[*path, key], value])
    elif isinstance(built, list) and isinstance(line, list) and len(built) == len(line):
        for i, (a, b) in enumerate(zip(built, line, strict=True)):
            _reference(a, b, [*path, i], ops, lost)
    elif not same(_unmarked(built), line):
        ops.append([path, line])


LEAVES: list[Any] = [0, 1, 1.0, True, False, None, "", "x", float("nan"), -0.0, 2**70]


def _tree(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice(LEAVES)
    if roll < 0.6:
        return [_tree(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice("abcde"): _tree(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _mutate(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        out = {k: _mutate(v, rng) for k, v in value.items() if rng.random() > 0.1}
        if rng.random() < 0.1:
            out[rng.choice("abcdef")] = _tree(rng, 3)
        return out
    if isinstance(value, list):
        return [_mutate(v, rng) for v in value] if rng.random() > 0.1 else _tree(rng, 3)
    return rng.choice(LEAVES) if rng.random() < 0.15 else value


def _bounded(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        return {k: _bounded(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded(v, rng) for v in value]
    return Bounded(value) if rng.random() < 0.05 else value


def test_line_patch_is_that_of_a_walk_into_every_sub_tree() -> None:
    rng = random.Random(23)
    for _ in range(3000):
        line = {"k": _tree(rng)}
        built = _bounded(_mutate(copy.deepcopy(line), rng), rng)
        ops: list[Any] = []
        lost: dict[str, int] = {}
        _reference(built, line, [], ops, lost)
        ops.sort(key=lambda op: json.dumps(op[0]))
        got_ops, got_lost = line_patch(built, line)
        assert json.dumps(got_ops) == json.dumps(ops)
        assert sum(got_lost.values()) == sum(lost.values())


def test_path_text_is_json_dumps_of_the_path() -> None:
    """The patch's edits are sorted by ``path_text``: it must be ``json.dumps``'s text, since
    the stored order is that of ``json.dumps``."""
    rng = random.Random(7)
    alphabet = [
        "a",
        "b",
        "Z",
        "0",
        " ",
        '"',
        "\\",
        "\n",
        "\x00",
        "é",
        "ü",
        "€",
        "😀",
        "\ud800",
        "]",
        ",",
    ]
    steps: list[Any] = ["", "a", "ab", "a b", 0, 1, 9, 10, 123456789012345678901234567890]
    for _ in range(3000):
        path = [
            "".join(rng.choices(alphabet, k=rng.randint(0, 4)))
            if rng.random() < 0.6
            else rng.choice([*steps, rng.randint(0, 10**6)])
            for _ in range(rng.randint(0, 5))
        ]
        assert path_text(path) == json.dumps(path)
    for odd in ([True, None], [1.5], [False, "x", 2]):  # never made by the walk; still json's
        assert path_text(odd) == json.dumps(odd)
    paths = [
        [rng.choice([*alphabet, *steps]) for _ in range(rng.randint(0, 3))] for _ in range(500)
    ]
    assert sorted(paths, key=path_text) == sorted(paths, key=json.dumps)


def test_equal_lines_give_no_edits_and_bounded_values_are_counted_once() -> None:
    """``_diff`` is entered only where the sub-trees differ: equal lines give no edits, and
    each bounded value that differs is counted once, as in the full walk."""
    rng = random.Random(41)
    for _ in range(2000):
        line = {"k": _tree(rng)}
        assert line_patch(copy.deepcopy(line), line) == ([], {}) or _has_nan(line)
        built = _bounded(_mutate(copy.deepcopy(line), rng), rng)
        ops: list[Any] = []
        lost: dict[str, int] = {}
        _reference(built, line, [], ops, lost)
        _, got_lost = line_patch(built, line)
        assert sum(got_lost.values()) == sum(lost.values())


def _has_nan(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return isinstance(value, float) and value != value


def test_a_line_deeper_than_the_walk_is_kept_whole() -> None:
    built: Any = []
    line: Any = [1]
    for _ in range(100_000):
        built, line = [built], [line]
    assert line_patch({"k": built}, {"k": line}) == ([[[], {"k": line}]], {})
