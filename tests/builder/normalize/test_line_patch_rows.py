"""The line patch reads normalize's named rows as they are: the line ``rebuild`` makes of
them is the one it makes of the same rows as dicts (what the restore reader hands it)."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from builder.normalize.episode import emit_episode
from builder.normalize.rows import EPISODE_TABLES, empty_rows
from builder.sources.inputs import SourceLine
from builder.validate.json_lines import LineJSON
from builder.validate.reject import Reject
from builder.validate.validator import Validator
from schemas.episode import Episode
from schemas.lines import EpisodeRows, rebuild


def _text(line: dict[str, Any]) -> str:
    return json.dumps(line, sort_keys=True, default=lambda b: ["bounded", b.summary])


def _rows(out: dict[str, list[Any]], before: tuple[int, ...], as_dicts: bool) -> EpisodeRows:
    def mine(table: str, start: int) -> list[Any]:
        rows = out[table][start:]
        return [r._asdict() for r in rows] if as_dicts else rows

    of = {t: mine(t, b) for t, b in zip(EPISODE_TABLES, before, strict=True)}
    return EpisodeRows(
        episode=of["episodes"][0],
        question={"question_text": "q", "hint": None},
        traces=of["traces"],
        turns=of["turns"],
        hooks=of["hooks"],
        corrections=of["corrections"],
        messages=of["messages"],
    )


def test_named_rows_rebuild_the_line_their_dicts_do() -> None:
    lines = [
        raw
        for path in sorted(glob.glob("data/episodes/*.jsonl"))
        for raw in Path(path).read_bytes().splitlines()
        if raw.strip()
    ]
    assert len(lines) > 10
    seen_bounded = 0
    validator = Validator(Episode)
    layouts: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        outcome = validator.validate(SourceLine("f", number, raw))
        if isinstance(outcome, Reject):
            continue
        record, layout = outcome.record, outcome.layout
        out = empty_rows()
        before = tuple(len(out[t]) for t in EPISODE_TABLES)
        # a small bound, so that some hook values are rebuilt as their summaries
        emit_episode(record, "f", number, 64, out, None, layout, raw=LineJSON(raw))
        layouts.add(layout)
        named = rebuild(_rows(out, before, as_dicts=False), mark_bounded=True)
        dicts = rebuild(_rows(out, before, as_dicts=True), mark_bounded=True)
        assert _text(named) == _text(dicts)
        seen_bounded += _text(named).count('["bounded"')
    assert seen_bounded  # the bounded branch was taken
    assert len(layouts) > 1  # and more than one layout's line
