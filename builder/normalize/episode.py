"""One validated episode becomes rows of every table but ``questions``: pure, so it runs in
the ingest's workers. Integrity checks run here, per episode, because everything they need
is on the episode's own line; the one that needs earlier lines (ground truth) is decided by
the build-wide ``Normalizer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import msgspec

from builder.contract.hashing import canonical_json, rehash_json_text
from builder.normalize import checks
from builder.normalize.extras import extra_fields, generic_path
from builder.normalize.hooks import hook_rows
from builder.normalize.line_patch import patch_of
from builder.normalize.messages import message_rows
from builder.normalize.questions import question_key
from builder.normalize.rows import (
    EPISODE_TABLES,
    CorrectionRow,
    EpisodeRow,
    Rows,
    TraceRow,
    TurnRow,
)
from builder.normalize.values import (
    Dump,
    decoded_json,
    json_text,
    present,
    record_json,
    utc,
    value_of,
)
from builder.validate.fastpath import FastRecord
from builder.validate.json_lines import LineJSON
from schemas import vocabulary
from schemas.layouts import LAYOUTS_BY_NAME, SEEDS, layout_path


@dataclass(slots=True)
class EpisodeInfo:
    """What the build-wide commit needs of one normalized episode (rows live in tables)."""

    number: int
    episode_id: str
    question_id: str
    question_gt_hash: str | None
    # the gold answer's hash, held to the question's ground truth; with an answer tolerance,
    # the ground truth's own hash when the gold answer matches the line's ground truth by
    # value (``checks.gold_near_ground_truth``). None when the episode is not verified,
    # neither as captured nor as recomputed: a wrong answer is then what ``verified: false``
    # says, not a failed check (recomputed verified, ``prm`` would label it right).
    gold_hash: str | None
    checks: list[str]  # every failed check except ground truth (needs earlier episodes)
    question_checks: list[str]
    extra_paths: list[str]  # generic JSON paths of unknown fields
    bounded: int
    counts: tuple[int, ...]  # rows added per table of EPISODE_TABLES
    duplicate_keys: list[str] = field(default_factory=list)  # generic JSON paths


class _GoldView:
    """Just enough of an episode for ``checks.check_ground_truth``."""

    __slots__ = ("teacher_gold_trace",)

    def __init__(self, gold_hash: str | None) -> None:
        self.teacher_gold_trace = SimpleNamespace(final_answer_hash=gold_hash)


def ground_truth_checks(gold_hash: str | None, ground_truth_hash: str | None) -> list[str]:
    return checks.check_ground_truth(_GoldView(gold_hash), ground_truth_hash)  # type: ignore[arg-type]


def emit_episode(
    ep: Any,
    file: str,
    number: int,
    hook_value_limit: int,
    out: Rows,
    precision: int | None = None,
    layout: str = SEEDS.name,
    duplicates: Sequence[str] = (),
    *,
    tolerance: float | None = None,
    raw: bytes | LineJSON | None = None,
    question_checks: list[str] | None = None,
) -> EpisodeInfo:
    """Append one episode's rows (every table but ``questions``) to ``out``; pure.

    ``ep`` is a pydantic ``Episode`` or its fast-path twin (``builder.validate.fastpath``), whose
    any-typed values are decoded JSON, so their canonical text skips ``normalize_value``.
    ``raw``: the line's text (or the line as its checks read it), for the episode's
    ``line_patch`` (null without it). ``question_checks``: ``checks.check_question`` of its
    question, when the caller has it already (it makes the question's row too)."""
    dump: Dump = decoded_json if isinstance(ep, FastRecord) else record_json
    written, ep = ep, with_answer_hashes(ep, dump, precision)
    before = tuple(len(out[t]) for t in EPISODE_TABLES)
    if question_checks is None:
        question_checks = checks.check_question(ep.question, precision)
    failed: list[str] = list(question_checks)
    question_checks = list(question_checks)
    if duplicates:
        failed.append(vocabulary.DUPLICATE_JSON_KEY)
        if any(p == "$.question" or p.startswith("$.question.") for p in duplicates):
            question_checks.append(vocabulary.DUPLICATE_JSON_KEY)  # the question's own keys
    bounded = 0
    eid = ep.episode_id
    traces = [("gold", 0, ep.teacher_gold_trace)]
    traces += [("consistency", i, t) for i, t in enumerate(ep.consistency_traces)]
    for role, index, trace in traces:
        trace_failed, trace_bounded = _trace(
            out, eid, role, index, trace, (hook_value_limit, precision), dump
        )
        failed += trace_failed
        bounded += trace_bounded
    filled = written.consistency_traces if written is not ep else None
    votes = checks.consensus(ep.consistency_traces, filled)
    by_value = checks.value_votes(ep, tolerance) if tolerance is not None else None
    by_ground_truth = LAYOUTS_BY_NAME[layout].ground_truth_evidence and not ep.consistency_traces
    gold_hash = ep.teacher_gold_trace.final_answer_hash
    truth_hash = checks.ground_truth_for(ep.question, gold_hash)
    if by_ground_truth:
        verified = checks.verified_by_ground_truth(ep, tolerance)
    else:
        verified = checks.recompute_verified(ep, votes, by_value)
    if tolerance is not None and checks.gold_near_ground_truth(ep, tolerance):
        gold_hash = truth_hash  # held to the ground truth it matches by value
    if ep.verified and not verified:
        failed.append(vocabulary.VERIFIED_MISMATCH)
    failed += checks.check_triangulation(
        ep, votes, by_ground_truth, by_value, LAYOUTS_BY_NAME[layout].verified_as_gold_matches
    )
    rl = ep.rl_verification_data
    expected = json_text(rl, "expected_final_answer", dump) if rl is not None else None
    failed += checks.check_expected_answer(ep, expected, precision)
    failed += checks.check_expected_is_gold(ep, precision, tolerance)
    extras = dict(extra_fields(ep)) if ep.model_extra is not None else {}
    if extras and layout != SEEDS.name:  # paths as the line's own layout spells them
        extras = {layout_path(layout, path): value for path, value in extras.items()}
    message_rows(out, ep)
    meta, sft = ep.triangulation_metadata, ep.conversation_for_sft
    key = question_key(ep.question)
    row = EpisodeRow(
        episode_id=eid,
        question_id=key,
        timestamp=utc(ep.timestamp),
        verified=ep.verified,
        verified_recomputed=verified,
        system_prompt=sft.system_prompt if sft else None,
        n_messages=len(sft.messages) if sft else None,
        expected_final_answer=expected,
        expected_final_answer_hash=rl.expected_final_answer_hash if rl else None,
        ground_truth_hashes=sorted(checks.accepted_hashes(ep.question)),
        n_consistency_traces=len(ep.consistency_traces),
        n_consistency_runs=meta.n_consistency_runs if meta else None,
        n_consistency_succeeded=meta.n_consistency_succeeded if meta else None,
        majority_answer_hash=meta.majority_answer_hash if meta else None,
        majority_count=meta.majority_count if meta else None,
        gold_matches_majority=meta.gold_matches_majority if meta else None,
        csv_source=ep.csv_source,
        extra_fields=canonical_json(extras) if extras else None,
        layout=layout,
        line_patch=None,
        source_file=file,
        source_line=number,
    )
    if raw is not None:
        patch = patch_of(row, ep.question, out, before, raw, hook_value_limit)
        row = row._replace(line_patch=patch)
    out["episodes"].append(row)
    return EpisodeInfo(
        number,
        eid,
        key,
        truth_hash,
        gold_hash if ep.verified or verified else None,
        failed,
        question_checks,
        [generic_path(p) for p in extras],
        bounded,
        tuple(len(out[t]) - b for t, b in zip(EPISODE_TABLES, before, strict=True)),
        sorted({generic_path(p) for p in duplicates}),
    )


def with_answer_hashes(ep: Any, dump: Dump, precision: int | None) -> Any:
    """``ep`` with the hash of every trace that has an answer but no hash filled in.

    The capture side writes ``hash(answer) if answer else None``: a falsy answer (``0``,
    ``False``, ``""``, ``[]``) gets no hash although the trace submitted it. Its hash is the
    one the capture side would have written, so the trace counts as submitted in the votes
    and the verified guarantees, and the answer is what RL rewards compare against."""
    traces = [ep.teacher_gold_trace, *ep.consistency_traces]
    if all(t.final_answer_hash is not None or checks.answer_of(t) is None for t in traces):
        return ep
    filled = []
    for trace in traces:
        answer = checks.answer_of(trace)
        if trace.final_answer_hash is None and answer is not None:
            try:
                hashed = rehash_json_text(dump(answer), precision)
            except RecursionError:  # too deep to round: the capture side could not hash it
                hashed = None
            trace = replace(trace, final_answer_hash=hashed)
        filled.append(trace)
    return replace(ep, teacher_gold_trace=filled[0], consistency_traces=filled[1:])


def replace(record: Any, **changes: Any) -> Any:
    """A copy of a frozen record (pydantic or fast-path) with ``changes``."""
    if isinstance(record, FastRecord):
        return msgspec.structs.replace(record, **changes)
    return record.model_copy(update=changes)


def trace_form(trace: Any) -> str:
    """``turns`` when the line gave turns, even none (a later-layout run that ended before
    its first turn); ``flat`` for code cells (empty turns beside them included)."""
    if trace.turns is None or (not trace.turns and trace.code_cells):
        return "flat"
    return "turns"


def _trace(
    out: Rows,
    episode_id: str,
    role: str,
    index: int,
    trace: Any,
    options: tuple[int, int | None],
    dump: Dump,
) -> tuple[list[str], int]:
    """``options``: the hook value limit and the hash precision."""
    limit, precision = options
    trace_id = f"{episode_id}:gold" if role == "gold" else f"{episode_id}:c{index}"
    answer = dump(value_of(trace, "final_answer"))
    failed = checks.check_final_answer(trace, answer, precision)
    turns = trace.turns or []
    failed += checks.check_corrections(turns)
    if trace.code_cells and turns:  # both forms: they must agree
        failed += checks.check_code_listing(trace)
    n_turns = _turns(out, trace_id, episode_id, trace, dump)
    submitted = checks.is_submitted(trace)
    n_hooks, hook_checks, bounded = hook_rows(out, trace_id, episode_id, trace, limit, dump)
    failed += hook_checks
    out["traces"].append(
        TraceRow(
            trace_id=trace_id,
            episode_id=episode_id,
            role=role,
            trace_index=index,
            form=trace_form(trace),
            execution_success=trace.execution_success,
            submitted=submitted,
            # null when nothing was submitted, not the text "null" of a captured None
            final_answer=answer if submitted and present(trace, "final_answer") else None,
            final_answer_hash=trace.final_answer_hash,
            submission_metadata=dump(trace.submission_metadata),
            total_turns=trace.total_turns,
            archived_turn_count=trace.archived_turn_count,
            n_turns=n_turns,
            n_hooks=n_hooks,
            checks=failed,
        )
    )
    return failed, bounded


def _turns(out: Rows, trace_id: str, episode_id: str, trace: Any, dump: Dump) -> int:
    rows = out["turns"]
    if not trace.turns:
        for i, code in enumerate(trace.code_cells):
            rows.append(
                TurnRow(
                    trace_id=trace_id,
                    turn_index=i,
                    episode_id=episode_id,
                    reasoning=None,
                    code=code,
                    success=None,
                    stdout=None,
                    stderr=None,
                    submitted=False,
                    submitted_answer=None,
                    has_correction=False,
                    n_hooks=0,
                )
            )
        return len(trace.code_cells)
    corrections = out["corrections"]
    for turn in trace.turns:
        ex = turn.execution
        # The capture side writes ``"submitted_answer": null`` on every turn that did not submit.
        submitted = value_of(ex, "submitted_answer") is not None
        rows.append(
            TurnRow(
                trace_id=trace_id,
                turn_index=turn.turn_index,
                episode_id=episode_id,
                reasoning=turn.reasoning,
                code=turn.code,
                success=ex.success,
                stdout=ex.stdout,
                stderr=ex.stderr,
                submitted=submitted,
                submitted_answer=dump(ex.submitted_answer) if submitted else None,
                has_correction=turn.correction is not None,
                n_hooks=len(ex.hooks),
            )
        )
        if turn.correction is not None:
            c = turn.correction
            corrections.append(
                CorrectionRow(
                    trace_id=trace_id,
                    turn_index=turn.turn_index,
                    episode_id=episode_id,
                    corrects_turn=c.corrects_turn,
                    error_type=c.error_type,
                    error_message=c.error_message,
                    attempts_since_error=c.attempts_since_error,
                    removed_lines=c.code_diff.removed_lines,
                    added_lines=c.code_diff.added_lines,
                )
            )
    return len(trace.turns)
