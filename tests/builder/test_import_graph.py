"""The import rule of ``builder/``, over its folders: the static graph of every ``import``
statement (those inside functions too, which only hide a cycle until the function runs) has
no cycle, and every package imports only the packages before it in the order data flows."""

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


# The packages (and top-level modules) of ``builder/`` in order. A module belongs to the
# package it sits in, directly under ``builder/``; it may import its own package, the ones
# before it, and ``schemas/``, never one after it. The foundation is imported by anything;
# the stages follow the data (sources → validate → normalize → ingest → derive → export,
# sessions a source whose rows the derive step makes, the cache wrapping the ingest and
# the export); the pipeline and the commands come last. The readers of a build folder
# (``report/``, ``publish/``) import the foundation only: never a stage.
FOUNDATION = ("__init__", "errors", "fs", "card_config", "config", "engine")
STAGES = (
    "contract",
    "sources",
    "validate",
    "normalize",
    "redact",
    "ingest",
    "sessions",
    "derive",
    "export",
    "cache",
)
READERS = ("report", "publish", "restore")
COMMANDS = ("pipeline", "cli", "__main__")
ORDER = (*FOUNDATION, *STAGES, *READERS, *COMMANDS)
# ``builder/__init__.py`` keeps the capture contract's hash rules importable by their old name
# (``builder.hashing``) for the sample generators: the one import of a stage it makes.
ALIASES = {("builder", "builder.contract.hashing")}


def package_of(module: str) -> str:
    """``builder.ingest.files`` -> ``ingest``; ``builder`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def may_import(importer: str, imported: str) -> bool:
    a, b = ORDER.index(importer), ORDER.index(imported)
    if importer in READERS:  # a build folder's readers: the foundation and each other
        return imported in FOUNDATION or imported in READERS
    if imported in READERS:  # read by the commands only
        return importer in COMMANDS
    return b <= a


def backward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({package_of(module)}) imports {target} ({package_of(target)})"
        for module, targets in graph.items()
        for target in targets
        if (module, target) not in ALIASES
        and not may_import(package_of(module), package_of(target))
    )


def test_every_package_has_its_place() -> None:
    """A new folder (or module) directly under ``builder/`` must be placed in ``ORDER``."""
    placed = {package_of(m) for m in import_graph()}
    assert placed <= set(ORDER), f"not in ORDER: {sorted(placed - set(ORDER))}"


def test_the_rule_finds_an_import_against_the_flow() -> None:
    graph = {
        "builder.export.card": {"builder.report.card_images", "builder.derive.sft"},
        "builder.derive.sft": {"builder.export.writer", "builder.fs.parquet"},
        "builder.report.x": {"builder.derive.eligibility", "builder.engine"},
        "builder.pipeline": {"builder.report.x", "builder.cli.episodes"},
    }
    assert backward_imports(graph) == [
        "builder.derive.sft (derive) imports builder.export.writer (export)",
        "builder.export.card (export) imports builder.report.card_images (report)",
        "builder.pipeline (pipeline) imports builder.cli.episodes (cli)",
        "builder.report.x (report) imports builder.derive.eligibility (derive)",
    ]


def test_imports_follow_the_data() -> None:
    """A stage imports only the stages before it (and ``schemas/``); the readers of a build
    folder import no stage."""
    assert backward_imports(import_graph()) == []


def test_schemas_import_nothing_of_the_builder() -> None:
    """``schemas/`` (the tables, the vocabulary, the manifest) is below every package."""
    for path in (ROOT / "schemas").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("builder"):
                raise AssertionError(f"{path.relative_to(ROOT)} imports {node.module}")
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("builder") for a in node.names), path


def test_the_export_reads_values_not_the_stages_that_counted_them() -> None:
    """The manifest is assembled from the values the stages returned (``schemas.stages``):
    the export imports no module of the stages that read, validated and normalized."""
    counted_by = {"sources", "validate", "normalize", "ingest"}
    found = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        if package_of(module) == "export"
        for target in targets
        if package_of(target) in counted_by
    )
    assert found == []
