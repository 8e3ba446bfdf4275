"""What the ingest stage counted: per file, per table; handed on as ``schemas.stages.Ingested``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from builder.normalize import NormalizeStats
from builder.sources.inputs import InputStats
from schemas.stages import Ingested, InputRead


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

    def ingested(self, stats: NormalizeStats) -> Ingested:
        """The frozen value the later stages read, with the normalize stage's counts."""
        return Ingested(
            inputs=tuple(
                InputRead(
                    s.path,
                    self.kinds[s.path],
                    s.sha256,
                    s.bytes,
                    s.lines,
                    self.counts[s.path].valid,
                    self.counts[s.path].rejected,
                    self.counts[s.path].blank,
                )
                for s in self.inputs
            ),
            rows=dict(self.rows),
            episode_checks=dict(sorted(stats.checks.items())),
            question_checks=dict(sorted(stats.question_checks.items())),
            extra_fields=dict(sorted(stats.extra_fields.items())),
            duplicate_keys=dict(sorted(stats.duplicate_keys.items())),
            bounded_hook_values=stats.bounded_hook_values,
        )
