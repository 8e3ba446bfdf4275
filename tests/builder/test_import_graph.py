"""No import cycle in ``builder/``: the static graph of every ``import`` statement (those
inside functions too, which only hide a cycle until the function runs) has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builder"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``builder`` modules it imports (``from a import b`` counts as ``a.b``
    when that is a module, else as ``a``)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t if t in modules else base for t in targets]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(step) == 1:
                return [*path[path.index(step) :], step]
            elif not state.get(step):
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(graph[step])))
    return None


def test_the_detector_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    assert "builder.ingest.ray_engine" in graph["builder.ingest.files"]  # imported where it is used


def test_builder_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


# The stages in the order data flows through them. A module belongs to the longest entry
# that is its name or a package above it; it may import its own layer and the layers before
# it, never a later one. The wrappers (cache, segments) come after the stages they wrap, and
# the commands last: they put the stages together.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "builder",
            "builder.errors",
            "builder.config",
            "builder.fs",
            "builder.contract",
            "builder.derive.splits",
            "builder.validate.teach",
            "builder.engine",
        ),
    ),
    ("sources", ("builder.sources",)),
    ("validate", ("builder.validate", "builder.ingest.rejects")),
    ("normalize", ("builder.normalize", "builder.redact")),
    ("ingest", ("builder.ingest", "builder.cli.validate_files")),
    ("derive", ("builder.derive",)),
    ("sessions", ("builder.sessions",)),
    ("export", ("builder.export",)),
    ("wrappers", ("builder.cache",)),
    ("readers", ("builder.report", "builder.publish")),
    ("commands", ("builder.pipeline", "builder.cli", "builder.__main__")),
)


def layer_of(module: str) -> int:
    matches = [
        (len(name), rank)
        for rank, (_, names) in enumerate(LAYERS)
        for name in names
        if module == name or module.startswith(name + ".")
    ]
    assert matches, f"{module} is in no layer: add it to LAYERS"
    return max(matches)[1]


def backward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def test_the_layer_check_finds_an_import_against_the_flow() -> None:
    graph = {"builder.export.card": {"builder.report.card_images"}, "builder.report.x": set()}
    assert backward_imports(graph) == [
        "builder.export.card (export) imports builder.report.card_images (readers)"
    ]
    assert layer_of("builder.ingest.codec") > layer_of("builder.engine")


def test_imports_follow_the_data() -> None:
    """sources → validate → normalize → ingest → derive → export, then what wraps or reads
    them: a stage never imports one that comes after it."""
    assert backward_imports(import_graph()) == []
