"""Where a failed integrity check is: the JSON path of the field that disagrees, and what it
should be, in the line's own layout.

The checks (``builder.normalize.checks``) answer *which* kinds failed, at full speed, for every
line.
This answers *where*, for the few lines that need it worded: a ``--strict`` reject and
``episodes validate --checks``. A kind it cannot place is worded by its meaning at ``$``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from builder.contract.hashing import canonical_json, question_id, value_hash
from builder.normalize import checks
from builder.normalize.hook_dag import hook_graph, unrecorded_names
from builder.normalize.hooks import hook_name, occurrence_keys
from builder.sources.inputs import SourceLine
from builder.validate.fastpath import UNSET
from builder.validate.json_lines import duplicate_keys
from builder.validate.reject import FieldError
from builder.validate.validator import Valid, Validator
from schemas import vocabulary
from schemas.episode import Episode, ExecutionTrace, Hook, Question
from schemas.layouts import layout_path

Explainer = Callable[[Episode, bytes, int | None], list[FieldError]]

_HASH_KINDS = (
    vocabulary.FINAL_ANSWER_HASH_MISMATCH,
    vocabulary.EXPECTED_ANSWER_HASH_MISMATCH,
    vocabulary.GROUND_TRUTH_MISMATCH,
    vocabulary.HASH_SCHEME_MISMATCH,
    vocabulary.PICKLE_HASH_SCHEME,
)


def explain_line(
    raw: bytes, failed: Sequence[str], precision: int | None
) -> tuple[FieldError, ...]:
    """``explain`` for a line's text (read again: only lines a check failed come here)."""
    outcome = Validator(Episode).validate(SourceLine("", 0, raw))
    if not isinstance(outcome, Valid):  # cannot happen to a line that was normalized
        return tuple(by_meaning(kind) for kind in dict.fromkeys(failed))
    return explain(outcome.record, raw, failed, precision, outcome.layout)


def explain(
    record: Episode, raw: bytes, failed: Sequence[str], precision: int | None, layout: str
) -> tuple[FieldError, ...]:
    """One error per place each failed kind is found (at least one per kind), its path as
    ``layout`` spells it and its message starting with the kind."""
    found: list[FieldError] = []
    for kind in dict.fromkeys(failed):
        if kind in _HASH_KINDS:  # one walk over every captured hash names all their kinds
            placed = [e for e in _hash_sites(record, precision) if e.message.startswith(kind)]
            if not placed and kind == vocabulary.GROUND_TRUTH_MISMATCH:
                placed = _gold_vs_truth(record)
        else:
            placed = _EXPLAINERS.get(kind, _nowhere)(record, raw, precision)
        found += placed or [by_meaning(kind)]
    return tuple(FieldError(layout_path(layout, e.path), e.message) for e in found)


def by_meaning(kind: str) -> FieldError:
    """A failed check that cannot be placed in the line: its kind and meaning, at ``$``."""
    return FieldError("$", f"{kind}: {vocabulary.MEANINGS.get(kind, kind)}")


def _nowhere(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    return []


def traces(record: Episode) -> Iterator[tuple[str, ExecutionTrace]]:
    yield "$.teacher_gold_trace", record.teacher_gold_trace
    for i, trace in enumerate(record.consistency_traces):
        yield f"$.consistency_traces[{i}]", trace


def _hash_sites(record: Episode, precision: int | None) -> list[FieldError]:
    """Every captured hash that fails ``checks.check_hash``, named by the kind it fails."""
    final = vocabulary.FINAL_ANSWER_HASH_MISMATCH
    sites: list[tuple[str, str | None, object, str, str]] = [
        (f"{path}.final_answer_hash", t.final_answer_hash, t.final_answer, "final_answer", final)
        for path, t in traces(record)
    ]
    rl = record.rl_verification_data
    if rl is not None:
        path = "$.rl_verification_data.expected_final_answer_hash"
        kind = vocabulary.EXPECTED_ANSWER_HASH_MISMATCH
        expected = rl.expected_final_answer
        sites.append((path, rl.expected_final_answer_hash, expected, "expected_final_answer", kind))
    q = record.question
    if q.ground_truth_hash is not None and "ground_truth" in q.model_fields_set:
        path, kind = "$.question.ground_truth_hash", vocabulary.GROUND_TRUTH_MISMATCH
        sites.append((path, q.ground_truth_hash, q.ground_truth, "ground_truth", kind))
    return _hash_errors(sites, precision)


def _hash_errors(
    sites: list[tuple[str, str | None, object, str, str]], precision: int | None
) -> list[FieldError]:
    """(path, captured hash, value, field, kind) → an error for each hash that fails."""
    out = []
    for path, captured, value, field, kind in sites:
        if captured is None:
            continue
        for failed in checks.check_hash(captured, canonical_json(value), precision, kind, value):
            should = value_hash(value, precision)
            message = f"{failed}: {captured} is not the hash of {field} (this build's: {should})"
            out.append(FieldError(path, message))
    return out


def explain_question(
    question: Question, failed: Sequence[str], precision: int | None
) -> tuple[FieldError, ...]:
    """``explain`` for a question bank's record: its ground truth's hash, its id."""
    found: list[FieldError] = []
    if question.ground_truth_hash is not None and "ground_truth" in question.model_fields_set:
        site = ("$.ground_truth_hash", question.ground_truth_hash, question.ground_truth)
        found += _hash_errors(
            [(*site, "ground_truth", vocabulary.GROUND_TRUTH_MISMATCH)], precision
        )
    if vocabulary.QUESTION_ID_MISMATCH in failed:
        address = question_id(question.question_text, question.hint)
        message = f"{question.id!r} is not the content address of its text and hint ({address})"
        found.append(FieldError("$.id", f"{vocabulary.QUESTION_ID_MISMATCH}: {message}"))
    placed = {e.message.split(":", 1)[0] for e in found}
    found += [by_meaning(kind) for kind in dict.fromkeys(failed) if kind not in placed]
    return tuple(found)


def _gold_vs_truth(record: Episode) -> list[FieldError]:
    """The gold answer against the ground truth its question carries (a ground truth learned
    from another line or a bank is not in this line: that one stays at ``$``)."""
    gold, truth = record.teacher_gold_trace.final_answer_hash, record.question.ground_truth_hash
    if gold is None or truth is None or gold == truth:
        return []
    said = f"{gold} is not the question's ground_truth_hash {truth}"
    message = f"{vocabulary.GROUND_TRUTH_MISMATCH}: {said}"
    return [FieldError("$.teacher_gold_trace.final_answer_hash", message)]


def _question_id(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    q = record.question
    address = question_id(q.question_text, q.hint)
    message = f"{q.id!r} is not the content address of the question's text and hint ({address})"
    return [FieldError("$.question.id", f"{vocabulary.QUESTION_ID_MISMATCH}: {message}")]


def _expected_not_gold(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    rl, gold = record.rl_verification_data, record.teacher_gold_trace
    if rl is None:
        return []
    expected = None if rl.expected_final_answer is UNSET else rl.expected_final_answer
    message = (
        f"{vocabulary.EXPECTED_ANSWER_NOT_GOLD}: {canonical_json(expected)} here, the gold "
        f"trace's final_answer is {canonical_json(checks.answer_of(gold))}"
    )
    return [FieldError("$.rl_verification_data.expected_final_answer", message)]


def _verified(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    if record.verified:
        claim = "true, but the traces do not bear it out"
    else:
        claim = "false, but the traces verify the gold answer"
    return [FieldError("$.verified", f"{vocabulary.VERIFIED_MISMATCH}: verified is {claim}")]


def _triangulation(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    meta, runs = record.triangulation_metadata, record.consistency_traces
    if meta is None:
        return []
    kind, base = vocabulary.TRIANGULATION_MISMATCH, "$.triangulation_metadata"
    succeeded = sum(t.execution_success for t in runs)
    out = []
    if meta.n_consistency_runs != len(runs):
        said = f"{kind}: is {meta.n_consistency_runs}; the line has {len(runs)} consistency traces"
        out.append(FieldError(f"{base}.n_consistency_runs", said))
    if meta.n_consistency_succeeded != succeeded:
        said = (
            f"{kind}: is {meta.n_consistency_succeeded}; {succeeded} consistency traces succeeded"
        )
        out.append(FieldError(f"{base}.n_consistency_succeeded", said))
    if not out:
        votes = checks.consensus(runs)
        ranked = Counter(votes.counts).most_common()
        shown = ", ".join(f"{h} ×{n}" for h, n in ranked[:SHOWN_HASHES]) or "none"
        if len(ranked) > SHOWN_HASHES:
            shown += f" and {len(ranked) - SHOWN_HASHES} more"
        gold_matches = str(meta.gold_matches_majority).lower()
        said = (
            f"{kind}: majority_answer_hash {meta.majority_answer_hash}, majority_count "
            f"{meta.majority_count}, gold_matches_majority {gold_matches}; the consistency "
            f"traces' answer hashes: {shown}; {_by_hash(votes, ranked, record)}"
        )
        out.append(FieldError(base, said))
    return out


SHOWN_HASHES = 5


def _by_hash(votes: checks.Consensus, ranked: list[tuple[str, int]], record: Episode) -> str:
    """What the metadata would be with the majority counted by answer hash (the checks'
    ``Consensus``; its tied hashes in the order the traces gave them)."""
    if not votes.majority_hashes:
        return "no consistency trace has an answer hash: majority_count 0"
    majority = [h for h, _ in ranked if h in votes.majority_hashes]
    gold = record.teacher_gold_trace.final_answer_hash
    return (
        f"by answer hash, majority_answer_hash {' or '.join(majority)} (a tie), "
        if len(majority) > 1
        else f"by answer hash, majority_answer_hash {majority[0]}, "
    ) + (
        f"majority_count {votes.majority_count}, gold_matches_majority "
        f"{str(gold in majority).lower()}"
    )


def _listings(trace: ExecutionTrace, path: str) -> list[tuple[str, Hook]]:
    """Every hook of a trace with its path, turn listings first."""
    listed = [
        (f"{path}.turns[{i}].execution.hooks[{j}]", hook)
        for i, turn in enumerate(trace.turns or [])
        for j, hook in enumerate(turn.execution.hooks)
    ]
    return listed + [(f"{path}.hooks[{j}]", hook) for j, hook in enumerate(trace.hooks)]


def _unknown_dependency(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    out = []
    for path, trace in traces(record):
        hooks = _listings(trace, path)
        names = {hook_name(h) for _, h in hooks} | unrecorded_names(trace)
        for where, hook in hooks:
            for k, dep in enumerate(hook.depends_on):
                if dep not in names:
                    message = (
                        f"{vocabulary.HOOK_UNKNOWN_DEPENDENCY}: {dep!r} names no hook of its trace"
                    )
                    out.append(FieldError(f"{where}.depends_on[{k}]", message))
    return out


def _listing_mismatch(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    """Where a trace's turn-level and trace-level hook listings disagree (hooks paired by
    name and occurrence, as ``merge_listings`` pairs them)."""
    kind = vocabulary.HOOK_LISTING_MISMATCH
    out = []
    for path, trace in traces(record):
        listed = _listings(trace, path)
        turns = [(w, h) for w, h in listed if ".turns[" in w]
        if not turns or not trace.hooks:
            continue
        at_turns = _keyed(turns)
        at_trace = _keyed([(w, h) for w, h in listed if ".turns[" not in w])
        for key, (where, hook) in at_trace.items():
            twin = at_turns.get(key)
            if twin is None:
                out.append(FieldError(where, f"{kind}: {key[0]!r} is listed in no turn"))
                continue
            for field in ("value_hash", "code_line"):
                mine, theirs = getattr(hook, field), getattr(twin[1], field)
                if mine != theirs:
                    said = f"{kind}: {field} {mine!r} here, {theirs!r} at {twin[0]}"
                    out.append(FieldError(f"{where}.{field}", said))
        for key, (where, _) in at_turns.items():
            if key not in at_trace:
                out.append(FieldError(where, f"{kind}: {key[0]!r} is not in the trace's hooks"))
    return out


def _keyed(listed: list[tuple[str, Hook]]) -> dict[tuple[str, int], tuple[str, Hook]]:
    return dict(zip(occurrence_keys([h for _, h in listed]), listed, strict=True))


def _code_listing(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    """Each code cell that is not the code of the turn at its position, and each turn or
    cell the other form lacks (``checks.check_code_listing`` pairs them by position)."""
    kind = vocabulary.CODE_LISTING_MISMATCH
    out = []
    for path, trace in traces(record):
        cells, turns = trace.code_cells, trace.turns or []
        if not cells or not turns:
            continue
        for i, cell in enumerate(cells[: len(turns)]):
            if cell != turns[i].code:
                said = f"{kind}: {_code(cell)} here, turns[{i}].code is {_code(turns[i].code)}"
                out.append(FieldError(f"{path}.code_cells[{i}]", said))
        for i in range(len(turns), len(cells)):
            said = f"{kind}: {_code(cells[i])} is the code of no turn (turns lists {len(turns)})"
            out.append(FieldError(f"{path}.code_cells[{i}]", said))
        for i in range(len(cells), len(turns)):
            said = (
                f"{kind}: {_code(turns[i].code)} is in no code cell (code_cells lists {len(cells)})"
            )
            out.append(FieldError(f"{path}.turns[{i}].code", said))
    return out


def _code(code: str, limit: int = 60) -> str:
    return repr(code if len(code) <= limit else code[: limit - 1] + "…")


def _cycle(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    """The hooks left once every hook whose dependencies can all be met is peeled off: those
    on a cycle, and those waiting on one."""
    out = []
    for path, trace in traces(record):
        hooks = [h for _, h in _listings(trace, path)]
        graph, _ = hook_graph((hook_name(h), h.depends_on) for h in hooks)
        left = set(range(len(graph)))
        while free := {i for i in left if not set(graph[i]) & left}:
            left -= free
        if left:
            names = ", ".join(sorted({repr(hook_name(hooks[i])) for i in left}))
            where = f"{path}.turns" if trace.turns else f"{path}.hooks"
            message = f"{vocabulary.HOOK_CYCLE}: the depends_on edges of {names} form a cycle"
            out.append(FieldError(where, message))
    return out


def _corrections(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    kind = vocabulary.CORRECTION_TARGET_INVALID
    return [
        FieldError(
            f"{path}.turns[{i}].correction.corrects_turn",
            f"{kind}: {turn.correction.corrects_turn}: {why}",  # type: ignore[union-attr]
        )
        for path, trace in traces(record)
        for i, turn, why in checks.invalid_corrections(trace.turns or [])
    ]


def _duplicate_keys(record: Episode, raw: bytes, precision: int | None) -> list[FieldError]:
    message = f"{vocabulary.DUPLICATE_JSON_KEY}: the key appears twice in its object"
    return [FieldError(path, message) for path in duplicate_keys(raw)]


_EXPLAINERS: dict[str, Explainer] = {
    vocabulary.QUESTION_ID_MISMATCH: _question_id,
    vocabulary.VERIFIED_MISMATCH: _verified,
    vocabulary.EXPECTED_ANSWER_NOT_GOLD: _expected_not_gold,
    vocabulary.TRIANGULATION_MISMATCH: _triangulation,
    vocabulary.HOOK_UNKNOWN_DEPENDENCY: _unknown_dependency,
    vocabulary.HOOK_CYCLE: _cycle,
    vocabulary.HOOK_LISTING_MISMATCH: _listing_mismatch,
    vocabulary.CODE_LISTING_MISMATCH: _code_listing,
    vocabulary.CORRECTION_TARGET_INVALID: _corrections,
    vocabulary.DUPLICATE_JSON_KEY: _duplicate_keys,
}
