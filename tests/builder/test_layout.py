"""The size and count limits of ``builder/``: a few modules at its top (the pipeline, the
config, the errors, the package and its ``__main__``), everything else in a folder named for
its stage, and no module too long to read in one sitting."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builder"
MAX_TOP_MODULES = 6
MAX_LINES = 400


def top_modules(package: Path) -> list[str]:
    return sorted(p.name for p in package.glob("*.py"))


def long_modules(package: Path, most: int) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > most:
            found.append(f"{path.relative_to(package.parent)}: {lines} lines")
    return found


def test_few_modules_directly_under_builder() -> None:
    top = top_modules(PACKAGE)
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules directly under builder/: {top}"


def test_no_module_is_over_the_line_limit() -> None:
    assert long_modules(PACKAGE, MAX_LINES) == []


def test_the_limits_see_what_breaks_them(tmp_path: Path) -> None:
    package = tmp_path / "builder"
    (package / "stage").mkdir(parents=True)
    for name in ("a", "b", "c", "d", "e", "f", "g"):
        (package / f"{name}.py").write_text("")
    (package / "stage" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert len(top_modules(package)) == 7 > MAX_TOP_MODULES
    assert long_modules(package, MAX_LINES) == [f"builder/stage/long.py: {MAX_LINES + 1} lines"]
