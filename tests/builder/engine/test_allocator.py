"""``builder.engine.allocator``: a process that frees and allocates MB-sized blocks again
faults far fewer pages once its allocator keeps what it frees; the user's own glibc
settings win; the ingest workers keep freed memory too."""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

import pytest

from builder.engine import LocalEngine
from tests.command_probe import last_json, sample_build

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's allocator: Linux only"
)


def churn() -> int:
    """Page faults while 40 blocks of 1 MiB are made, each written, and freed, 20 times
    (what a batch's lines and results do): about 10,000 when freed memory is kept, about
    200,000 when it goes back to the system after every round."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        blocks = [b"x" * (1 << 20) for _ in range(40)]
        del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


CHURN = """
import json, sys
from tests.builder.engine.test_allocator import churn
from builder.engine.allocator import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
print(json.dumps([kept, churn()]))
"""


def run(mode: str, env: dict[str, str]) -> list[object]:
    return list(last_json(CHURN, mode, env=env))


def _plain_environment() -> dict[str, str]:
    return {"GLIBC_TUNABLES": ""}


def test_freed_blocks_are_reused_instead_of_faulted_in_again() -> None:
    kept, faults = run("keep", _plain_environment())
    _, default_faults = run("default", _plain_environment())
    assert kept is True
    assert isinstance(faults, int) and isinstance(default_faults, int)
    assert default_faults > 100_000  # glibc's default: trimmed and faulted in every round
    assert faults * 5 < default_faults


def test_the_users_own_glibc_settings_are_left_as_they_are() -> None:
    tunables = {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}
    kept, faults = run("keep", tunables)
    assert kept is False
    assert isinstance(faults, int) and faults > 100_000  # the user's trimming, unchanged


def test_an_ingest_worker_keeps_the_memory_it_frees() -> None:
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        pytest.skip("this environment sets glibc's malloc tunables itself")
    engine = LocalEngine(1)
    try:
        (faults,) = list(engine.map(churn, [()]))
    finally:
        engine.close()
    assert faults < 50_000


def test_the_build_command_keeps_the_memory_it_frees(tmp_path: Path) -> None:
    setup = "from tests.builder.engine.test_allocator import churn"
    _, faults = sample_build(tmp_path, "churn()", setup, env=_plain_environment())
    assert faults < 50_000
