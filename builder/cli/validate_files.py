"""``episodes validate``: the validate stage over input files, no tables, the same rejects a
build writes; with ``--strict``, the integrity checks of each record as ``build --strict``
words them."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from builder.config import BuildConfig
from builder.ingest.question_banks import BankQuestions, question_check_failed, valid_records
from builder.ingest.rejects import RejectsWriter
from builder.ingest.results import FileCounts
from builder.normalize import Normalizer
from builder.normalize.episode import emit_episode
from builder.normalize.explain import explain
from builder.normalize.rows import empty_rows
from builder.sources.banks import bank_lines
from builder.sources.documents import records
from builder.sources.inputs import InputFile
from builder.validate.depth import too_deep
from builder.validate.json_lines import duplicate_keys
from builder.validate.reject import Reject
from builder.validate.validator import Valid, Validator
from schemas.episode import Episode, Question
from schemas.vocabulary import CHECK_FAILED


def validate_files(
    paths: Iterable[str],
    model: type[BaseModel],
    rejects: RejectsWriter,
    max_line_bytes: int,
    strict: BuildConfig | None = None,
    precision: int | None = None,
    settings: BuildConfig | None = None,
) -> dict[str, FileCounts]:
    """Validation only (``episodes validate``): no tables, same rejects. With ``strict`` (the
    build's settings), an episode or a bank's question whose integrity checks fail is a
    ``check_failed`` reject, worded as ``build --strict`` words it (checks of the lines
    given: an episode is not checked against a bank's ground truth). ``precision``: the hash
    scheme a malformed hash's message names the right value under. ``settings``: those every
    episode is normalized under (``strict``'s, else these, else the defaults)."""
    key = "episode_id" if model is Episode else "id"
    across = BankQuestions(precision) if model is Question else None
    validator = Validator(model, key, precision=precision)
    # Every episode is normalized as a build would (rows thrown away): a line nested past what
    # its checks follow is the same reject here (``builder.validate.depth``).
    settings = strict or settings or BuildConfig(hash_precision=precision)
    normalizer = Normalizer(
        settings.hook_value_limit, settings.hash_precision, settings.answer_tolerance
    )
    out: dict[str, FileCounts] = {}
    for path in paths:
        counts = out.setdefault(path, FileCounts())
        if across is not None:  # banks: as a build reads them
            validator = across.validator()
        lines = InputFile(path, max_line_bytes).lines()
        lines = bank_lines(lines) if model is Question else records(lines, max_line_bytes)
        for valid in valid_records(lines, validator, counts, rejects):
            if model is Episode:
                reject = _checked(valid, normalizer, strict is not None)
            elif strict is not None:
                reject = _question_checked(valid, normalizer)
            else:
                continue
            if reject is not None:
                counts.valid, counts.rejected = counts.valid - 1, counts.rejected + 1
                rejects.add(reject)
    return out


def _checked(valid: Valid[Episode], normalizer: Normalizer, strict: bool) -> Reject | None:
    """The reject of an episode nested too deep to normalize, or (``strict``) the
    ``check_failed`` one of an episode whose checks fail; else None."""
    line, record, precision = valid.line, valid.record, normalizer.hash_precision
    try:
        info = emit_episode(
            record,
            line.path,
            line.number,
            normalizer.hook_value_limit,
            empty_rows(),
            precision,
            valid.layout,
            duplicate_keys(line.raw),
            tolerance=normalizer.answer_tolerance,
        )
    except RecursionError:
        return too_deep(line.path, line.number, line.raw)
    if not strict:
        return None
    failed, new_question = normalizer.commit(info)
    if not failed:
        return None
    if new_question:
        normalizer.forget_question(info.question_id, info.question_gt_hash)
    errors = explain(record, line.raw, failed, precision, valid.layout)
    return Reject(line.path, line.number, CHECK_FAILED, errors, line.raw)


def _question_checked(valid: Valid[Question], normalizer: Normalizer) -> Reject | None:
    """The ``check_failed`` reject of a bank's question whose checks fail, else None."""
    line = valid.line
    failed = normalizer.question(valid.record, "", line.path, line.number, strict=True)
    return question_check_failed(valid, failed, normalizer.hash_precision) if failed else None
