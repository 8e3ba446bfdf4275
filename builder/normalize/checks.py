"""Integrity checks: what the capture pipeline promises, recomputed from the data itself.

Each check returns the kinds that failed; the normalizer marks them on the affected rows and
the manifest counts them. A failed check never drops a row: later stages decide (training
configs exclude flagged episodes; ``--strict`` turns failures into rejects).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from builder.contract.answers import answers_match, majority, matches_itself
from builder.contract.hashing import (
    canonical_json,
    pickle_hash,
    question_id,
    rehash_json_text,
    value_hash,
)
from builder.normalize.written_as_null import hashed_before_written_as_null
from builder.validate.fastpath import UNSET
from schemas.episode import Episode, ExecutionTrace, Question, Turn
from schemas.vocabulary import (
    CODE_LISTING_MISMATCH,
    CORRECTION_TARGET_INVALID,
    EXPECTED_ANSWER_HASH_MISMATCH,
    EXPECTED_ANSWER_NOT_GOLD,
    FINAL_ANSWER_HASH_MISMATCH,
    GROUND_TRUTH_MISMATCH,
    HASH_SCHEME_MISMATCH,
    PICKLE_HASH_SCHEME,
    QUESTION_ID_MISMATCH,
    TRIANGULATION_MISMATCH,
)

ROUNDED_PRECISION = 2  # the capture contract package's default


def other_scheme(precision: int | None) -> int | None:
    """The scheme a misconfigured build should have used: rounded for exact, and back."""
    return ROUNDED_PRECISION if precision is None else None


def check_hash(
    captured: str | None, text: str, precision: int | None, kind: str, value: Any = None
) -> list[str]:
    """``captured`` against the hash of the canonical JSON ``text`` under ``precision``;
    a hash that holds only under the other scheme is a ``hash_scheme_mismatch``, one that
    is the pickle hash of ``value`` (the same value as read from the line) a
    ``pickle_hash_scheme``."""
    if captured is None or captured == _rehash(text, precision):
        return []
    if captured == _rehash(text, other_scheme(precision)):
        return [HASH_SCHEME_MISMATCH]
    if captured == pickle_hash(value):
        return [PICKLE_HASH_SCHEME]
    if "null" in text and hashed_before_written_as_null(text, captured, precision):
        return []  # NaN or ±inf hashed, then written as null (pydantic's model_dump_json)
    return [kind]


def _rehash(text: str, precision: int | None) -> str | None:
    """None when the rounded scheme cannot walk the value (nested deeper than Python's
    recursion limit: the capture side could not have hashed it that way either)."""
    try:
        return rehash_json_text(text, precision)
    except RecursionError:
        return None


@lru_cache(maxsize=1 << 14)
def content_id(question_text: str, hint: str | None) -> str:
    """``question_id``, remembered: a question is asked by several episodes (≈ 5 each at
    5,000 episodes of the profile), and each episode wants its id three times over (this
    check, its row and its question's row)."""
    return question_id(question_text, hint)


def check_question(question: Question, precision: int | None = None) -> list[str]:
    failed = []
    if question.id != content_id(question.question_text, question.hint):
        failed.append(QUESTION_ID_MISMATCH)
    # Only a question that carries its ground truth can be checked against its hash: an
    # absent ground_truth is not the answer ``null``.
    if question.ground_truth_hash is not None and "ground_truth" in question.model_fields_set:
        text = canonical_json(question.ground_truth)
        kind, truth = GROUND_TRUTH_MISMATCH, question.ground_truth
        failed += check_hash(question.ground_truth_hash, text, precision, kind, truth)
    return failed


def is_submitted(trace: ExecutionTrace) -> bool:
    """A trace submitted an answer when it carries an answer hash (the normalizer fills in
    the hash of an answer captured without one: ``normalize.episode.with_answer_hashes``)."""
    return trace.final_answer_hash is not None


@dataclass(frozen=True)
class Consensus:
    """What the consistency traces say, recomputed."""

    runs: int
    succeeded: int
    counts: Mapping[str, int]
    # The hashes as the line wrote them, when the normalizer filled some in: the capture
    # code counts the traces whose written hash is the majority's, so a falsy answer it
    # wrote without a hash is not in its ``majority_count``.
    written: Mapping[str, int] | None = None

    @property
    def majority_count(self) -> int:
        return max(self.counts.values(), default=0)

    @property
    def majority_hashes(self) -> set[str]:
        """Hashes with the top count; several when tied."""
        top = self.majority_count
        return {h for h, c in self.counts.items() if c == top and top > 0}


def consensus(
    traces: Sequence[ExecutionTrace], written: Sequence[ExecutionTrace] | None = None
) -> Consensus:
    """``written``: the same traces before the normalizer filled in missing answer hashes."""
    hashes = _hash_counts(traces)
    before = _hash_counts(written) if written is not None else None
    return Consensus(len(traces), sum(t.execution_success for t in traces), hashes, before)


def _hash_counts(traces: Sequence[ExecutionTrace]) -> Counter[str]:
    return Counter(t.final_answer_hash for t in traces if t.final_answer_hash is not None)


@dataclass(frozen=True)
class ValueVotes:
    """What the consistency traces say when answers are compared by value within a
    tolerance (``builder.contract.answers``), as the capture code compares them."""

    count: int  # submitted answers in the majority's cluster
    majority_hash: str | None  # the hash of the cluster's first answer
    gold_matches: bool  # the gold answer matches that first answer
    tolerance: float = 0.0  # the tolerance they were compared within


def answer_of(trace: Any) -> Any:
    """A trace's answer as decoded; None when it gave none."""
    answer = trace.final_answer
    return None if answer is UNSET else answer


def value_votes(episode: Episode, tolerance: float) -> ValueVotes:
    submitted = [t for t in episode.consistency_traces if answer_of(t) is not None]
    found = majority([answer_of(t) for t in submitted], tolerance)
    if found is None:
        return ValueVotes(0, None, False, tolerance)
    first, size = found
    gold = answer_of(episode.teacher_gold_trace)
    matches = gold is not None and answers_match(gold, answer_of(submitted[first]), tolerance)
    return ValueVotes(size, submitted[first].final_answer_hash, matches, tolerance)


def recompute_verified(
    episode: Episode, votes: Consensus, by_value: ValueVotes | None = None
) -> bool:
    """The three verified guarantees: gold submitted, gold = majority, one consistency match;
    by answer hash, or (``by_value``) by value within the build's answer tolerance."""
    gold = episode.teacher_gold_trace
    if not (gold.execution_success and is_submitted(gold)):
        return False
    by_hash = (
        gold.final_answer_hash in votes.majority_hashes
        and votes.counts.get(gold.final_answer_hash or "", 0) >= 1
    )
    if by_value is None:
        return by_hash
    # Compared by value, as the capture code compares: not even an answer with the same hash
    by_hash = by_hash and matches_itself(answer_of(gold), by_value.tolerance)
    return by_hash or (by_value.gold_matches and by_value.count >= 1)


def accepted_hashes(question: Question) -> frozenset[str]:
    """Every hash a correct answer to ``question`` may have: its ``ground_truth_hash`` and
    the ``ground_truth_hashes`` of a question with several valid answers."""
    single = [question.ground_truth_hash] if question.ground_truth_hash is not None else []
    return frozenset([*single, *(question.ground_truth_hashes or [])])


def ground_truth_for(question: Question, gold_hash: str | None) -> str | None:
    """The ground-truth hash the gold answer is held to: the accepted one it matches, else
    the question's own (or, with only a list, its first)."""
    accepted = accepted_hashes(question)
    if gold_hash in accepted:
        return gold_hash
    return question.ground_truth_hash or min(accepted, default=None)


def verified_by_ground_truth(episode: Episode, tolerance: float | None = None) -> bool:
    """The capture side's ground-truth strategy (no consistency traces): the gold trace
    succeeded, submitted, and its answer hash is one the question accepts, or (with an
    answer ``tolerance``) its answer matches the line's ground truth by value. Without one,
    a match the capture side made within its float tolerance fails here, and the episode
    is flagged ``verified_mismatch``. The hash is tried first, as that code tries it: a NaN
    answer with its NaN ground truth's hash is verified (by triangulation it is not: there
    the capture code compares values only, ``recompute_verified``)."""
    gold = episode.teacher_gold_trace
    if not (gold.execution_success and is_submitted(gold)):
        return False
    if gold.final_answer_hash in accepted_hashes(episode.question):
        return True
    return tolerance is not None and gold_near_ground_truth(episode, tolerance)


def gold_near_ground_truth(episode: Episode, tolerance: float) -> bool:
    """The gold answer matches, by value within ``tolerance``, the ground truth its line's
    question carries (not one learned from another line: only its hash is known)."""
    question = episode.question
    if "ground_truth" not in question.model_fields_set or question.ground_truth is None:
        return False
    gold = answer_of(episode.teacher_gold_trace)
    return gold is not None and answers_match(gold, question.ground_truth, tolerance)


def check_triangulation(
    episode: Episode,
    votes: Consensus,
    by_ground_truth: bool = False,
    by_value: ValueVotes | None = None,
    verified_as_gold_matches: bool = False,
) -> list[str]:
    """The captured triangulation against the consistency traces, by answer hash or
    (``by_value``) as recomputed by value; ``verified_as_gold_matches``: the layout's capture
    code may have written ``verified`` as ``gold_matches_majority`` (``schemas.layouts``).
    Verified by ground truth (no consistency traces), it records the gold answer (or the
    ground truth) as the majority answer, a count of 0 (or 1: the synthetic generator counts
    the gold trace), and ``gold_matches_majority`` equal to ``verified``."""
    meta = episode.triangulation_metadata
    if meta is None:
        return []
    if by_ground_truth:
        gold_hash = episode.teacher_gold_trace.final_answer_hash
        truth_hash = episode.question.ground_truth_hash
        holds = (
            meta.n_consistency_runs == 0
            and meta.n_consistency_succeeded == 0
            and meta.majority_count in (0, 1)
            and meta.majority_answer_hash in (None, gold_hash, truth_hash)
            and meta.gold_matches_majority == episode.verified
        )
        return [] if holds else [TRIANGULATION_MISMATCH]
    gold_hash = episode.teacher_gold_trace.final_answer_hash
    expected_majority = meta.majority_answer_hash in votes.majority_hashes or (
        meta.majority_answer_hash is None and not votes.counts
    )
    # The capture code counted the majority's cluster (by value), or later the traces whose
    # written hash is the majority's.
    hashes = votes.written if votes.written is not None else votes.counts
    with_its_hash = hashes.get(meta.majority_answer_hash or "", 0)
    count_holds = meta.majority_count == votes.majority_count or (
        votes.written is not None and meta.majority_count == with_its_hash
    )
    runs_hold = (
        meta.n_consistency_runs == votes.runs and meta.n_consistency_succeeded == votes.succeeded
    )
    holds = (
        count_holds
        and expected_majority
        and meta.gold_matches_majority
        == (gold_hash is not None and gold_hash == meta.majority_answer_hash)
    )
    if by_value is not None and not holds:
        holds = (
            meta.majority_count in (by_value.count, with_its_hash)
            and meta.majority_answer_hash == by_value.majority_hash
            and meta.gold_matches_majority == by_value.gold_matches
        )
    if verified_as_gold_matches and not holds:  # ``verified`` is checked apart
        holds = count_holds and expected_majority and meta.gold_matches_majority == episode.verified
    return [] if runs_hold and holds else [TRIANGULATION_MISMATCH]


def check_final_answer(trace: ExecutionTrace, text: str, precision: int | None = None) -> list[str]:
    """The trace's answer hash against its answer (canonical JSON ``text``)."""
    answer = trace.final_answer
    return check_hash(trace.final_answer_hash, text, precision, FINAL_ANSWER_HASH_MISMATCH, answer)


def check_expected_answer(
    episode: Episode, text: str | None, precision: int | None = None
) -> list[str]:
    """rl_verification_data's hash against its answer (``None``: absent, hashed as null)."""
    rl = episode.rl_verification_data
    if rl is None:
        return []
    text = canonical_json(None) if text is None else text
    expected, kind = rl.expected_final_answer, EXPECTED_ANSWER_HASH_MISMATCH
    return check_hash(rl.expected_final_answer_hash, text, precision, kind, expected)


def check_expected_is_gold(
    episode: Episode, precision: int | None = None, tolerance: float | None = None
) -> list[str]:
    """rl_verification_data's expected answer against the gold trace's, which the capture
    code writes there: as values (equal hashes of them, or within the answer ``tolerance``);
    a captured hash that is not its value's is the hash checks' to name. Only a gold that
    submitted has an answer to compare."""
    rl, gold = episode.rl_verification_data, episode.teacher_gold_trace
    if rl is None or not is_submitted(gold):
        return []
    if rl.expected_final_answer_hash == gold.final_answer_hash:
        return []  # the usual line; were either hash not its value's, that check says so
    expected = None if rl.expected_final_answer is UNSET else rl.expected_final_answer
    if value_hash(expected, precision) == value_hash(answer_of(gold), precision):
        return []
    if tolerance is not None and answers_match(answer_of(gold), expected, tolerance):
        return []
    return [EXPECTED_ANSWER_NOT_GOLD]


def check_ground_truth(episode: Episode, ground_truth_hash: str | None) -> list[str]:
    gold_hash = episode.teacher_gold_trace.final_answer_hash
    if ground_truth_hash is not None and gold_hash is not None and gold_hash != ground_truth_hash:
        return [GROUND_TRUTH_MISMATCH]
    return []


def check_code_listing(trace: ExecutionTrace) -> list[str]:
    """A trace that gives its code twice, as ``code_cells`` and as ``turns``, must give the
    same code, in order: the turns' rows are made of the turns alone, so other cells would
    be code the tables never show."""
    cells, turns = trace.code_cells, trace.turns
    if not cells or not turns:  # one form only (or empty turns beside cells: flat)
        return []
    if len(cells) != len(turns) or any(c != t.code for c, t in zip(cells, turns, strict=True)):
        return [CODE_LISTING_MISMATCH]
    return []


def check_corrections(turns: Sequence[Turn]) -> list[str]:
    """A correction must point at an earlier turn of the same trace that failed."""
    return [CORRECTION_TARGET_INVALID] if any(invalid_corrections(turns)) else []


def invalid_corrections(turns: Sequence[Turn]) -> Iterator[tuple[int, Turn, str]]:
    """(position in ``turns``, turn, why) of each correction whose target is no earlier
    failed turn of the trace."""
    by_index = {t.turn_index: t for t in turns}
    for i, turn in enumerate(turns):
        c = turn.correction
        if c is None:
            continue
        target = by_index.get(c.corrects_turn)
        if target is None:
            yield i, turn, "no turn of the trace has that index"
        elif c.corrects_turn >= turn.turn_index:
            yield i, turn, "it is not an earlier turn"
        elif target.execution.success:
            yield i, turn, "that turn succeeded"
