"""The dataset card's charts as PNG bytes, from plain numbers: what ``card_images`` shows,
drawn by ``card_png`` (Pillow)."""

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
    from builder.report import card_png

    if name == "funnel":
        return card_png.bars(
            CHARTS[name], data["funnel"], "episodes / rows", highlight=data["funnel_rows"]
        )
    if name == "rejects":
        return card_png.bars(CHARTS[name], data["rejects"], "lines / episodes")
    marks = {f"{limit // 1024}k tokens (est.)": limit * CHARS_PER_TOKEN for limit in CONTEXT_LIMITS}
    return card_png.lengths(CHARTS[name], data["lengths"], "characters (log)", marks)
