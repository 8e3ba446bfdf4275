"""The hook DAG check: ``depends_on`` names hooks of the same trace and the edges form a
DAG. Its own module because its graph (``hook_graph``) serves the check, its explanation
(``builder.normalize.explain``) and the tests' reference alike."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

from schemas.vocabulary import HOOK_CYCLE, HOOK_UNKNOWN_DEPENDENCY


def check_hook_dag(edges: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """``depends_on`` must name hooks of the same trace and form a DAG (``hook_graph``): a
    name found nowhere is ``hook_unknown_dependency``; a cycle among the resolved edges is
    ``hook_cycle``."""
    edges = list(edges)
    if _only_earlier(edges):
        return []
    graph, unknown = hook_graph(edges)
    failed = [HOOK_UNKNOWN_DEPENDENCY] if unknown else []
    return [*failed, HOOK_CYCLE] if _has_cycle(graph) else failed


def _only_earlier(edges: Sequence[tuple[str, Sequence[str]]]) -> bool:
    """Whether every dependency names a hook listed before its dependent (the common trace):
    then no name is unknown and every edge points back, so there is no cycle either. One
    pass over a set, where the graph costs a dict of lists and a bisection per edge."""
    seen: set[str] = set()
    for name, deps in edges:
        for dep in deps:
            if dep not in seen:
                return False
        seen.add(name)
    return True


def hook_graph(edges: Iterable[tuple[str, Sequence[str]]]) -> tuple[list[list[int]], bool]:
    """Each hook's dependencies as indexes into ``edges``, and whether a name was found
    nowhere. Names may repeat: in ``df = df.dropna()`` the new ``df`` depends on the earlier
    ``df``. So each occurrence is its own node, and a dependency resolves to the latest
    occurrence of that name listed before the dependent hook, or, when there is none, to the
    first one after it (out of execution order, but not wrong as such)."""
    edges = list(edges)
    where: dict[str, list[int]] = {}
    for index, (name, _) in enumerate(edges):
        where.setdefault(name, []).append(index)
    graph: list[list[int]] = []
    unknown = False
    for index, (_, deps) in enumerate(edges):
        targets = []
        for dep in deps:
            occurrences = where.get(dep)
            if occurrences is None:
                unknown = True
                continue
            # ``occurrences`` ascend: the last before ``index``, else the first after it,
            # else only itself (a self-loop, which the cycle search reports).
            before = bisect_left(occurrences, index)
            after = bisect_right(occurrences, index)
            if before:
                targets.append(occurrences[before - 1])
            else:
                targets.append(occurrences[after] if after < len(occurrences) else index)
        graph.append(targets)
    return graph, unknown


def _has_cycle(graph: Sequence[Sequence[int]]) -> bool:
    # The common trace, every dependency naming an earlier hook, never gets here
    # (``_only_earlier``). Iterative colouring DFS: a hostile trace cannot exhaust the
    # recursion limit.
    state = [0] * len(graph)  # 0 = new, 1 = on the stack, 2 = done
    for root in range(len(graph)):
        if state[root]:
            continue
        stack = [(root, iter(graph[root]))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state[child] == 1:
                return True
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(graph[child])))
    return False
