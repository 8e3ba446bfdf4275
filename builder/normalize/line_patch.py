"""An episode's ``line_patch``: what its line held that its rows, rebuilt into a line by
``schemas.lines.rebuild``, do not give back (the restore reader applies it)."""

from __future__ import annotations

from collections.abc import Callable
from json import dumps as _dumps
from json import loads as _loads
from typing import Any

from builder.contract.stored_values import bound_stored_value
from builder.normalize.rows import EPISODE_TABLES, Rows
from builder.normalize.values import decoded_json
from builder.validate.json_lines import LineJSON, line_value, read_json
from schemas.lines import EpisodeRows, line_patch, rebuild, same


def patch_of(
    row: Any,
    question: Any,
    out: Rows,
    before: tuple[int, ...],
    raw: bytes | LineJSON,
    limit: int,
) -> str | None:
    """The episode's ``line_patch``: what its rows, rebuilt into a line, lack of ``raw``."""
    # the named rows as they are: ``rebuild`` reads their columns as attributes
    mine = {t: out[t][b:] for t, b in zip(EPISODE_TABLES, before, strict=True)}
    rows = EpisodeRows(
        episode=row,
        question={"question_text": question.question_text, "hint": question.hint},
        traces=mine["traces"],
        turns=mine["turns"],
        hooks=mine["hooks"],
        corrections=mine["corrections"],
        messages=mine["messages"],
    )
    ops, _ = line_patch(rebuild(rows, mark_bounded=True), line_value(raw), _summarizes(limit))
    if not ops:
        return None
    try:
        return decoded_json(ops)
    except RecursionError:  # deeper than json writes: the line as it came
        return _dumps([[[], None]])[:-6] + read_json(raw).raw.decode("utf-8") + "]]"


def _summarizes(limit: int) -> Callable[[Any, Any], bool]:
    """Whether a summary is what bounding at ``limit`` makes of a line's hook value."""

    def check(value: Any, summary: Any) -> bool:
        try:
            text, bounded = bound_stored_value(decoded_json(value), limit)
        except (ValueError, RecursionError):
            return False
        return bounded and same(_loads(text), summary)

    return check
