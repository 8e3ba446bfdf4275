"""The dataset card's charts as PNG bytes, from plain numbers: what ``card_images`` shows,
drawn here or in a process of its own (``chart_process``). Imports no Polars or Arrow, so
that process starts on matplotlib alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builder.report.context_limits import CHARS_PER_TOKEN, CONTEXT_LIMITS

CHARTS = {
    "funnel": "From episode lines to training rows",
    "lengths": "Characters per row, per training config",
    "rejects": "Rejects and failed checks, by kind",
}


def draw_chart(name: str, data: Mapping[str, Any]) -> bytes:
    """PNG bytes of card chart ``name`` (``data``: ``card_images.chart_numbers`` and the
    row lengths)."""
    from builder.report import charts

    if name == "funnel":
        figure = charts.bars(
            CHARTS[name], data["funnel"], "episodes / rows", highlight=data["funnel_rows"]
        )
    elif name == "rejects":
        figure = charts.bars(CHARTS[name], data["rejects"], "lines / episodes")
    else:
        marks = {
            f"{limit // 1024}k tokens (est.)": limit * CHARS_PER_TOKEN for limit in CONTEXT_LIMITS
        }
        figure = charts.lengths(CHARTS[name], data["lengths"], "characters (log)", marks)
    return charts.to_png(figure, dpi=80)
