"""Each table's columns are written down once, in ``schemas``: every text column declares its
role there, and no module of the builder keeps a column list of its own."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from schemas.objectives import OBJECTIVES
from schemas.sessions import ROW_SCHEMAS, SESSION_TABLES
from schemas.tables import ROLES, TABLES, column, is_text, role_of

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = {**TABLES, **SESSION_TABLES, **{f"{k} (as read)": v for k, v in ROW_SCHEMAS.items()}}
# Module-level column lists that are projections (which columns a stage reads), not facts
# about a column; each is checked against its table's schema below.
PROJECTIONS = {
    ("builder/export/buckets.py", "LOOKUP_COLUMNS"): "questions",
    # what the held-out plan reads of every question and episode, before any segment is derived
    ("builder/derive/splits/plan.py", "QUESTION_SOURCE"): "questions",
    ("builder/derive/splits/plan.py", "EPISODE_SOURCE"): "episodes",
    # what decontamination reads of the messages and turns the configs render as prompts
    ("builder/derive/splits/prompts.py", "MESSAGE_SOURCE"): "messages",
    ("builder/derive/splits/prompts.py", "TURN_SOURCE"): "turns",
}


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_every_text_column_declares_its_role(name: str) -> None:
    undeclared = [f.name for f in CAPTURED[name] if is_text(f.type) and role_of(f) is None]
    assert undeclared == [], f"{name}: declare a role (schemas.tables.ROLES) for {undeclared}"
    assert all(role_of(f) in (None, *ROLES) for f in CAPTURED[name])


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown role 'secret'"):
        column("x", pa.string(), "doc", role="secret")


def _string_items(node: ast.expr) -> list[str] | None:
    """The strings of a literal tuple/list/set (or dict values of such), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = [_string_items(e) for e in node.elts]
    elif isinstance(node, ast.Dict):
        items = [_string_items(v) for v in node.values]
    else:
        return None
    if any(i is None for i in items):
        return None
    return [s for i in items for s in i or []]


def _module_constants(path: Path) -> Iterator[tuple[str, list[str]]]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            strings = _string_items(node.value)
            for target in targets:
                if isinstance(target, ast.Name) and strings:
                    yield target.id, strings


def _column_lists(root: Path) -> Iterator[tuple[str, str, str]]:
    """(module, constant, table) for each module-level literal under ``root/builder`` naming
    2+ columns of one table and nothing else."""
    tables = {**CAPTURED, **OBJECTIVES}
    for path in sorted((root / "builder").rglob("*.py")):
        module = str(path.relative_to(root))
        for constant, strings in _module_constants(path):
            for table, schema in tables.items():
                if len(set(strings)) >= 2 and set(strings) <= set(schema.names):
                    yield module, constant, table
                    break


def test_no_module_keeps_a_column_list_of_its_own() -> None:
    found = {(module, constant): table for module, constant, table in _column_lists(ROOT)}
    own = {k: v for k, v in found.items() if k not in PROJECTIONS}
    assert own == {}, f"take these from the column roles in schemas/: {own}"
    assert found == PROJECTIONS  # a projection that no longer exists leaves the list


def test_the_scan_finds_a_column_list(tmp_path: Path) -> None:
    """The scan is not blind: the list the redaction step used to keep is found."""
    (tmp_path / "builder").mkdir()
    (tmp_path / "builder" / "m.py").write_text(
        'TEXT_COLUMNS = {"turns": ("reasoning", "code", "stdout")}\nNOT_COLUMNS = ("a", "b")\n'
    )
    assert list(_column_lists(tmp_path)) == [("builder/m.py", "TEXT_COLUMNS", "turns")]
