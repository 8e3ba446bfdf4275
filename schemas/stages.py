"""What one stage hands the next: small frozen values, never a live object.

The export assembles the manifest from these alone (``builder.export``), so it depends on
what the earlier stages counted, not on how they counted it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class InputRead:
    """One input file as the ingest read it: what it was, and where each line went."""

    path: str
    kind: str  # episodes | questions
    sha256: str
    bytes: int
    lines: int
    valid: int
    rejected: int
    blank: int

    @property
    def records(self) -> int:
        """A JSON document's records are its episodes, not its lines."""
        return self.valid + self.rejected


@dataclass(frozen=True)
class Ingested:
    """The ingest's result (sources → validate → normalize into the staging tables)."""

    inputs: tuple[InputRead, ...] = ()
    rows: Mapping[str, int] = field(default_factory=dict)  # staged rows by table
    # integrity checks failed: of affected episodes, and of question rows
    episode_checks: Mapping[str, int] = field(default_factory=dict)
    question_checks: Mapping[str, int] = field(default_factory=dict)
    extra_fields: Mapping[str, int] = field(default_factory=dict)  # unknown fields by path
    duplicate_keys: Mapping[str, int] = field(default_factory=dict)  # by generic JSON path
    bounded_hook_values: int = 0

    @property
    def records(self) -> int:
        return sum(i.records for i in self.inputs)

    @property
    def rejected(self) -> int:
        return sum(i.rejected for i in self.inputs)

    @property
    def lines(self) -> int:
        return sum(i.lines for i in self.inputs)

    def input(self, path: str) -> InputRead:
        return next(i for i in self.inputs if i.path == path)

    def manifest_inputs(self) -> list[dict[str, Any]]:
        """The manifest's ``inputs``, in the order read."""
        keys = ("path", "kind", "sha256", "bytes", "lines")
        counts = ("valid", "rejected", "blank")
        return [
            {**{k: getattr(i, k) for k in keys}, "records": i.records}
            | {k: getattr(i, k) for k in counts}
            for i in self.inputs
        ]


@dataclass(frozen=True)
class Rejected:
    """What the rejects file holds, by kind (``schemas.vocabulary``)."""

    by_kind: Mapping[str, int] = field(default_factory=dict)
    sha256: str = ""  # of the rejects file as written ("": none was written)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    @classmethod
    def of(cls, by_kind: Mapping[str, int], sha256: str = "") -> Rejected:
        return cls(dict(sorted((k, n) for k, n in by_kind.items() if n)), sha256)


@dataclass(frozen=True)
class StageResults:
    """Everything the stages before the export counted, for the manifest and the card."""

    ingested: Ingested
    rejected: Rejected
    sessions: Mapping[str, Any] | None = None  # the sessions' summary, when there are any
