"""The carried segment: the split assignment of questions earlier builds held and this one
does not, written into the ``splits`` config (``in_build`` false) so that the next build
reads them as it reads every other assignment, and a question that comes back keeps its
split however many versions it was away. Always written afresh, never cached: what it holds
depends on the previous build, not on any input file.

Its texts are published again by every build, so each build redacts them again: with the
secret values it knows (an earlier build may not have learned them) and its patterns.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from builder.config import BuildConfig
from builder.contract.hashing import normalize_question_text
from builder.derive.splits.plan import HeldOutPlan
from builder.export.segment import SegmentOutput, SegmentWriters
from builder.fs.parquet import TABLE_GROUP_ROWS
from builder.redact import RedactionOptions, assigned_values, redact_columns
from schemas.tables import SPLIT_ASSIGNMENT

CARRIED_SEGMENT = "carried"
TEXT = "normalized_text"


def export_carried(
    out: Path, plan: HeldOutPlan, config: BuildConfig, known: Iterable[str] = ()
) -> SegmentOutput | None:
    """The carried rows' files in ``out`` (the staged dataset folder); None when there are
    none. ``known``: the secret values this build redacts. Their questions are no build's:
    they are not tallied as this build's splits."""
    rows = plan.carried_rows()
    if not rows.height:
        return None
    counts: dict[str, int] = {}
    if config.redaction_enabled:
        options = RedactionOptions.of(config)
        # the texts are casefolded: so are the values looked for in them
        values = {v.casefold() for v in known} | set(assigned_values([(rows, [TEXT])], options))
        rows, counts = redact_columns(rows, [TEXT], options, values)
        normalized = [None if t is None else normalize_question_text(t) for t in rows[TEXT]]
        rows = rows.with_columns(pl.Series(TEXT, normalized, dtype=pl.String))
    writers = SegmentWriters(out, CARRIED_SEGMENT, config)
    writers.write("splits", SPLIT_ASSIGNMENT, TABLE_GROUP_ROWS, rows)
    output = SegmentOutput(CARRIED_SEGMENT, redactions={k: n for k, n in counts.items() if n})
    return writers.close(output)
