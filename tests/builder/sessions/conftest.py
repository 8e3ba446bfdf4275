"""Fixtures: every sessions test runs against SQLite and a real, throwaway PostgreSQL server.

The server is started once per test session (``pg_cluster`` in ``tests/conftest.py``:
initdb + pg_ctl in a temp dir, as an unprivileged user when we are root); each test gets its
own database in it. PostgreSQL tests are skipped only when the server binaries are not
installed. The PostgreSQL URL carries a password (ignored by the trust-auth server) so that
every test also checks it never leaks into rejects or summaries.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The suite's helpers (sessions_support.py, next to this file) are imported by name; with
# --import-mode=importlib the test directory is not on sys.path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from session_fixtures import backend

__all__ = ["backend"]
