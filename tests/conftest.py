"""Shared fixtures: one build of the committed sample, reused by every end-to-end test."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from builder.config import load_config
from builder.pipeline import BuildReport, build
from builder.sessions.pgcluster import PostgresCluster, find_bindir, temporary_cluster

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_as_from_a_terminal() -> Iterator[None]:
    """The tests of interrupted builds send Ctrl-C as a terminal does. A test run started as
    a background job of a script (no job control) inherits SIGINT ignored, and so would
    every build it starts: the handler a terminal's Python has is put back for the session
    (builds started from here then get SIGINT as default)."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if previous is not None:  # None: set outside Python, nothing to put back
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session", autouse=True)
def own_datasets_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A ``datasets`` cache per test session: its key for a local folder can match a folder
    of the same name built by an earlier session, whose cached rows it would then return."""
    import datasets.config

    cache = tmp_path_factory.mktemp("hf-datasets-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("HF_DATASETS_CACHE", str(cache))
    patch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    yield
    patch.undo()


@pytest.fixture(scope="session")
def sample_build(tmp_path_factory: pytest.TempPathFactory) -> BuildReport:
    """The sample as `make build` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("sample")
    config = load_config(ROOT / "dataset.toml")
    config = replace(config, out=out / "dataset", rejects=out / "rejects.jsonl")
    return build(config)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    if find_bindir() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl, postgres) are not installed")
    with temporary_cluster() as cluster:
        yield cluster
