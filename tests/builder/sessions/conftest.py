"""Fixtures: every sessions test runs against SQLite and a real, throwaway PostgreSQL server.

The server is started once per test session (``builder.sessions.pgcluster``: initdb + pg_ctl
in a temp dir, as an unprivileged user when we are root); each test gets its own database
in it. PostgreSQL tests are skipped only when the server binaries are not installed. The
PostgreSQL URL carries a password (ignored by the trust-auth server) so that every test also
checks it never leaks into rejects or summaries.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from builder.sessions.pgcluster import PostgresCluster, find_bindir, temporary_cluster

# The suite's helpers (sessions_support.py, next to this file) are imported by name; with
# --import-mode=importlib the test directory is not on sys.path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions_support import PASSWORD, Backend


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    if find_bindir() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl, postgres) are not installed")
    with temporary_cluster() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        path = tmp_path / "sessions.db"
        yield Backend("sqlite", f"sqlite:///{path}", str(path))
        return
    cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = cluster.url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    host = f"127.0.0.1:{cluster.port}"
    yield Backend(
        "postgresql",
        f"postgresql://postgres:{PASSWORD}@{host}/{name}",
        f"postgresql://postgres@{host}/{name}",
    )
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
