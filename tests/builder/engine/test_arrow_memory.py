"""``episodes`` gives Arrow jemalloc in its own process and its ingest workers
(``builder.engine.arrow_memory``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.command_probe import run_alone

# Runs a command, then imports pyarrow (as a build's later stages do) and asks a worker of
# the ingest's pool which allocator its Arrow uses.
SCRIPT = """
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
