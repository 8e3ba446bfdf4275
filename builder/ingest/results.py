"""What the ingest stage counted: per file, per table."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from builder.sources.inputs import InputStats


@dataclass
class FileCounts:
    valid: int = 0
    rejected: int = 0
    blank: int = 0


@dataclass
class IngestResult:
    inputs: list[InputStats] = field(default_factory=list)
    counts: dict[str, FileCounts] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)  # path -> episodes | questions
    rows: Counter[str] = field(default_factory=Counter)

    @property
    def lines(self) -> int:
        return sum(c.valid + c.rejected + c.blank for c in self.counts.values())

    @property
    def rejected(self) -> int:
        return sum(c.rejected for c in self.counts.values())

    @property
    def records(self) -> int:
        return sum(c.valid + c.rejected for c in self.counts.values())
