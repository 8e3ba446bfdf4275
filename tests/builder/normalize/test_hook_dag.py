"""The hook graph and its cycle search against a plain reference, on random listings with
repeated names, unknown names, self-loops and forward edges."""

from __future__ import annotations

import random
from collections.abc import Sequence

from builder.normalize import hook_dag


def _reference_graph(edges: list[tuple[str, list[str]]]) -> tuple[list[list[int]], set[str]]:
    where: dict[str, list[int]] = {}
    for index, (name, _) in enumerate(edges):
        where.setdefault(name, []).append(index)
    graph: list[list[int]] = []
    unknown: set[str] = set()
    for index, (_, deps) in enumerate(edges):
        targets = []
        for dep in deps:
            if dep not in where:
                unknown.add(dep)
                continue
            earlier = [j for j in where[dep] if j < index]
            later = [j for j in where[dep] if j > index]
            targets.append(earlier[-1] if earlier else later[0] if later else index)
        graph.append(targets)
    return graph, unknown


def _reference_cycle(graph: Sequence[Sequence[int]]) -> bool:
    done: set[int] = set()

    def visit(node: int, path: set[int]) -> bool:
        if node in path:
            return True
        if node in done:
            return False
        path.add(node)
        found = any(visit(child, path) for child in graph[node])
        path.discard(node)
        done.add(node)
        return found

    return any(visit(node, set()) for node in range(len(graph)))


def test_hook_graph_and_cycles_agree_with_the_reference() -> None:
    rng = random.Random(17)
    cycles = 0
    for _ in range(3000):
        names = [rng.choice("abcdef") for _ in range(rng.randint(0, 8))]
        edges = [
            (name, [rng.choice("abcdefg") for _ in range(rng.randint(0, 3))]) for name in names
        ]
        graph, unknown = hook_dag.hook_graph(edges)
        assert (graph, unknown) == _reference_graph(edges), edges
        cycle = _reference_cycle(graph)
        cycles += cycle
        assert hook_dag._has_cycle(graph) is cycle, edges
    assert 300 < cycles < 2700  # both outcomes are exercised


def _reference_dag_checks(edges: list[tuple[str, list[str]]]) -> list[str]:
    graph, unknown = _reference_graph(edges)
    failed = [hook_dag.HOOK_UNKNOWN_DEPENDENCY] if unknown else []
    return [*failed, hook_dag.HOOK_CYCLE] if _reference_cycle(graph) else failed


def test_check_hook_dag_agrees_with_the_reference() -> None:
    """Listings whose every dependency names an earlier hook are passed in one pass; the
    rest go through the graph: the same failed checks either way."""
    rng = random.Random(29)
    passed = 0
    for _ in range(5000):
        names = [rng.choice("abcdef") for _ in range(rng.randint(0, 8))]
        edges = []
        for i, name in enumerate(names):
            pool = names[:i] if rng.random() < 0.7 and i else list("abcdefg")
            edges.append((name, [rng.choice(pool) for _ in range(rng.randint(0, 3))]))
        got = hook_dag.check_hook_dag(iter(edges))
        assert got == _reference_dag_checks(edges), edges
        passed += not got
    assert 1000 < passed < 4900
