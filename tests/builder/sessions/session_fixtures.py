"""The ``backend`` fixture: a database to talk to, SQLite and a real, throwaway PostgreSQL
(``pg_cluster``, in ``tests/conftest.py``), for the suites of the sessions source and of
their derive step. Imported by their ``conftest.py``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sessions_support import PASSWORD, Backend

from builder.sessions.pgcluster import PostgresCluster


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
