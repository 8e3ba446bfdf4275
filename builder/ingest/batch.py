"""Validate and normalize one batch of episode lines: the per-batch work an engine runs (in
this process, a worker process or on Ray). Pure: a batch's result depends on its lines and
settings only, so it runs anywhere and the commit (``builder.ingest.files``) is the same.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from builder.ingest.codec import BatchResult
from builder.normalize.checks import check_question
from builder.normalize.episode import EpisodeInfo, emit_episode
from builder.normalize.questions import question_row
from builder.normalize.rows import (
    EPISODE_TABLES,
    EPISODES_WITHOUT_CHECKS,
    Rows,
    empty_rows,
    to_table,
)
from builder.sources.inputs import SourceLine
from builder.validate import fastpath
from builder.validate.depth import too_deep
from builder.validate.json_lines import LineJSON, duplicate_keys
from builder.validate.reject import Reject
from builder.validate.validator import Validator
from schemas.episode import Episode
from schemas.layouts import SEEDS
from schemas.tables import TABLES


def normalize_batch(
    lines: list[SourceLine],
    hook_value_limit: int,
    precision: int | None = None,
    tolerance: float | None = None,
) -> BatchResult:
    """Validate and normalize a batch of episode lines (of one file or of several, each line
    naming its own): pure, so it runs on any worker.

    The fast typed path (``builder.validate.fastpath``) decodes the common line; anything it
    declines is validated by pydantic, which accepts it or names the exact reject."""
    with _collector_paused():
        return _normalize_batch(lines, hook_value_limit, precision, tolerance)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """A batch allocates millions of containers (parsed lines, rows) and frees them by
    reference counting, making no cycles: the cyclic collector's passes over them found
    nothing and cost a tenth of the batch's CPU. Cycles made anyway are collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _normalize_batch(
    lines: list[SourceLine],
    hook_value_limit: int,
    precision: int | None,
    tolerance: float | None,
) -> BatchResult:
    validator = Validator(Episode, precision=precision)
    out = empty_rows()
    questions: list[tuple[object, ...]] = []
    outcomes: list[EpisodeInfo | Reject] = []
    for line in lines:
        at = {name: len(rows) for name, rows in out.items()}
        try:
            outcome = _line(line, validator, out, hook_value_limit, precision, tolerance)
        except RecursionError:  # nested past Python's limit: a reject, its rows taken back
            for name, rows in out.items():
                del rows[at[name] :]
            outcomes.append(too_deep(line.path, line.number, line.raw))
            continue
        if isinstance(outcome, Reject):
            outcomes.append(outcome)
            continue
        info, question = outcome
        outcomes.append(info)
        questions.append(question)
    tables = {name: to_table(out[name], TABLES[name]) for name in EPISODE_TABLES[1:]}
    tables["episodes"] = to_table(out["episodes"], EPISODES_WITHOUT_CHECKS)
    tables["questions"] = to_table(questions, TABLES["questions"])
    return BatchResult(outcomes, tables)


def _line(
    line: SourceLine,
    validator: Validator[Episode],
    out: Rows,
    hook_value_limit: int,
    precision: int | None,
    tolerance: float | None,
) -> Reject | tuple[EpisodeInfo, tuple[object, ...]]:
    """One line's reject, or its info (its rows added to ``out``) and its question's row."""
    # a too long line is always a reject: only whole lines are read as JSON
    json_line = None if line.too_long else LineJSON(line.raw)
    record = None if json_line is None else fastpath.decode(Episode, json_line)
    if record is None:
        outcome = validator.validate(line, json_line)
        if isinstance(outcome, Reject):
            return outcome
        record, layout = outcome.record, outcome.layout
    else:
        layout = SEEDS.name
    read = json_line or line.raw
    path = line.path
    # once for the episode's checks and its question's row (pure: the same list for both)
    question_failed = check_question(record.question, precision)
    info = emit_episode(
        record,
        path,
        line.number,
        hook_value_limit,
        out,
        precision,
        layout,
        duplicate_keys(read),
        tolerance=tolerance,
        raw=read,
        question_checks=question_failed,
    )
    question = question_row(
        record.question, "episode", path, line.number, precision, question_failed
    )
    return info, question
