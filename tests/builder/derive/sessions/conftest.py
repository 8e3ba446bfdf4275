"""The sessions suite's databases (``tests/builder/sessions``): the derive step is tested on
rows read from SQLite and PostgreSQL, as a build reads them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sessions"))

from session_fixtures import backend

__all__ = ["backend"]
