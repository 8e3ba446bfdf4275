"""The hook DAG check: ``depends_on`` names hooks of the same trace (or a name its code has
without one: ``unrecorded_names``) and the edges form a DAG. Its own module because its graph
(``hook_graph``) serves the check, its explanation (``builder.normalize.explain``) and the
tests' reference alike."""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence, Set
from typing import Any

from schemas.episode import PRELOADED_NAMES
from schemas.vocabulary import HOOK_CYCLE, HOOK_UNKNOWN_DEPENDENCY


def check_hook_dag(
    edges: Iterable[tuple[str, Sequence[str]]],
    bound: Callable[[], Set[str]] = frozenset,
) -> list[str]:
    """``depends_on`` must name hooks of the same trace and form a DAG (``hook_graph``): a
    name found nowhere, and not among the names the trace's code has without a hook of
    theirs (``bound()``, asked only then: ``unrecorded_names``), is
    ``hook_unknown_dependency``; a cycle among the resolved edges is ``hook_cycle``."""
    edges = list(edges)
    if _only_earlier(edges):
        return []
    graph, unknown = hook_graph(edges)
    failed = [HOOK_UNKNOWN_DEPENDENCY] if unknown and unknown - bound() else []
    return [*failed, HOOK_CYCLE] if _has_cycle(graph) else failed


def unrecorded_names(trace: Any) -> frozenset[str]:
    """Names a trace's ``depends_on`` may give that no hook of it records: the frame the
    capture's sandbox loads before the first cell (``PRELOADED_NAMES``, the usual root of a
    teacher's DAG), and the names its turns hooked in a cell that then failed, whose hooks
    the capture does not keep (the correction that follows depends on them)."""
    hooked = (
        _hooked_in(turn.code)
        for turn in trace.turns or []
        if turn.execution.success is False and "hook" in turn.code
    )
    return PRELOADED_NAMES.union(*hooked)


def _hooked_in(code: str) -> set[str]:
    """The names ``hook(value, code_line, name, ...)`` calls give in ``code``: a keyword or
    the third argument, as a string literal. Code that does not parse ran no hook."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called != "hook":
            continue
        given = [k.value for k in node.keywords if k.arg == "name"]
        given += node.args[2:3]
        names.update(
            n.value for n in given if isinstance(n, ast.Constant) and isinstance(n.value, str)
        )
    return names


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


def hook_graph(
    edges: Iterable[tuple[str, Sequence[str]]],
) -> tuple[list[list[int]], set[str]]:
    """Each hook's dependencies as indexes into ``edges``, and the names found nowhere. Names
    may repeat: in ``df = df.dropna()`` the new ``df`` depends on the earlier ``df``. So each
    occurrence is its own node, and a dependency resolves to the latest occurrence of that
    name listed before the dependent hook, or, when there is none, to the first one after it
    (out of execution order, but not wrong as such)."""
    edges = list(edges)
    where: dict[str, list[int]] = {}
    for index, (name, _) in enumerate(edges):
        where.setdefault(name, []).append(index)
    graph: list[list[int]] = []
    unknown: set[str] = set()
    for index, (_, deps) in enumerate(edges):
        targets = []
        for dep in deps:
            occurrences = where.get(dep)
            if occurrences is None:
                unknown.add(dep)
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
