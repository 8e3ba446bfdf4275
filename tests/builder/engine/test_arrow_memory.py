"""``episodes`` gives Arrow jemalloc in its own process and its ingest workers
(``builder.engine.arrow_memory``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.command_probe import run_alone

# Runs a command, then imports pyarrow (as a build's later stages do) and asks a worker of
# the ingest's pool which allocator its Arrow uses.
SCRIPT = """
import os
import sys
from builder.cli.episodes import main
assert "pyarrow" not in sys.modules
main(["schema", "--out", sys.argv[1]])
import pyarrow as pa
from builder.engine import LocalEngine
engine = LocalEngine(1)
try:
    asked = "__import__('pyarrow').default_memory_pool().backend_name"
    [worker] = engine.map(eval, [(asked,)])
finally:
    engine.close()
print(pa.default_memory_pool().backend_name, worker)
"""


def _run(tmp_path: Path, **env: str) -> list[str]:
    # stderr empty: no warning of an allocator Arrow lacks
    return run_alone(SCRIPT, str(tmp_path / "schema.json"), env=env)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="set on Linux only")
def test_the_command_and_its_workers_give_arrow_jemalloc(tmp_path: Path) -> None:
    assert _run(tmp_path) == ["jemalloc", "jemalloc"]


def test_an_allocator_the_user_chose_is_kept(tmp_path: Path) -> None:
    assert _run(tmp_path, ARROW_DEFAULT_MEMORY_POOL="system") == ["system", "system"]


def test_an_arrow_built_elsewhere_is_left_its_own_allocator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pyarrow whose C++ library is not inside the package (conda's, a source build) may
    lack jemalloc, and would warn of the setting in every process."""
    import importlib.machinery

    from builder.engine import arrow_memory

    found = importlib.machinery.ModuleSpec("pyarrow", None, is_package=True)
    found.submodule_search_locations = [str(tmp_path)]  # no libarrow.so.* there
    monkeypatch.setattr(arrow_memory.importlib.util, "find_spec", lambda name: found)
    monkeypatch.delenv(arrow_memory.POOL_VARIABLE, raising=False)
    arrow_memory.jemalloc_for_arrow()
    assert arrow_memory.POOL_VARIABLE not in os.environ
    (tmp_path / "libarrow.so.2600").touch()
    arrow_memory.jemalloc_for_arrow()
    assert os.environ[arrow_memory.POOL_VARIABLE] == "jemalloc"
