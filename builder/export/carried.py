"""The carried segment: the split assignment of questions earlier builds held and this one
does not, written into the ``splits`` config (``in_build`` false) so that the next build
reads them as it reads every other assignment, and a question that comes back keeps its
split however many versions it was away. Always written afresh, never cached: what it holds
depends on the previous build, not on any input file."""

from __future__ import annotations

from pathlib import Path

from builder.config import BuildConfig
from builder.derive.splits.plan import HeldOutPlan
from builder.export.segment import SegmentOutput, SegmentWriters
from builder.fs.parquet import TABLE_GROUP_ROWS
from schemas.tables import SPLIT_ASSIGNMENT

CARRIED_SEGMENT = "carried"


def export_carried(out: Path, plan: HeldOutPlan, config: BuildConfig) -> SegmentOutput | None:
    """The carried rows' files in ``out`` (the staged dataset folder); None when there are
    none. Their questions are no build's: they are not tallied as this build's splits."""
    rows = plan.carried_rows()
    if not rows.height:
        return None
    writers = SegmentWriters(out, CARRIED_SEGMENT, config)
    writers.write("splits", SPLIT_ASSIGNMENT, TABLE_GROUP_ROWS, rows)
    return writers.close(SegmentOutput(CARRIED_SEGMENT))
