"""A line (or a database row) that did not make it into the tables: where it came from, why,
and the raw bytes unchanged, so nothing is lost and every error can be found."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str


@dataclass(frozen=True)
class Reject:
    """A line that did not make it into the tables, with everything needed to fix it."""

    source_file: str
    line: int | None  # None for database rows, which are named by ``key`` instead
    kind: str
    errors: tuple[FieldError, ...]
    raw: bytes
    key: str | None = None  # e.g. ``actions.action_uuid=...`` for a database row

    @property
    def path(self) -> str:
        return self.errors[0].path

    @property
    def message(self) -> str:
        return "; ".join(f"{e.path}: {e.message}" for e in self.errors)

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "source_file": self.source_file,
            "line": self.line,
            "kind": self.kind,
            "path": self.path,
            "message": self.message,
            "errors": [{"path": e.path, "message": e.message} for e in self.errors],
        }
        if self.key is not None:
            record["key"] = self.key
        try:
            record["raw"] = self.raw.decode("utf-8")
        except UnicodeDecodeError:
            record["raw_base64"] = base64.b64encode(self.raw).decode("ascii")
        return record

    def __str__(self) -> str:
        where = self.source_file if self.line is None else f"{self.source_file}:{self.line}"
        if self.key is not None:
            where += f" [{self.key}]"
        return f"{where}: {self.kind}: {self.message}"
