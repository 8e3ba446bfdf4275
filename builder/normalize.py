"""Normalize stage: validated episodes become rows of the relational tables in ``schemas.tables``.

Nested lists become child tables keyed by parent id and list index. Any-typed values are
stored as canonical JSON text, hashed once from that same text. Integrity checks run here,
per episode, because everything they need is on the episode's own line (plus the question
banks, loaded before any episode).
"""

from __future__ import annotations

from collections import Counter, namedtuple
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json import dumps as _dumps
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
from pydantic import BaseModel

from builder import checks
from builder.fastpath import UNSET, FastRecord
from builder.hashing import canonical_json, normalize_question_text
from builder.summaries import bound_stored_value
from builder.validate import Valid, duplicate_keys
from schemas.episode import Episode, Hook, Question
from schemas.layouts import LAYOUTS_BY_NAME, SEEDS, layout_path
from schemas.tables import TABLES, empty_table


def utc(moment: datetime | None) -> datetime | None:
    """Naive capture times are read as UTC so the column has one time zone."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def hook_name(hook: Hook) -> str:
    return hook.variable_name if hook.variable_name is not None else hook.code_line


def extra_fields(model: BaseModel, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Unknown input fields anywhere in the tree, keyed by JSON path."""
    for key, value in (model.model_extra or {}).items():
        yield f"{path}.{key}", value
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from extra_fields(value, f"{path}.{name}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from extra_fields(item, f"{path}.{name}[{i}]")


def generic_path(path: str) -> str:
    """``$.consistency_traces[2].foo`` -> ``$.consistency_traces[*].foo`` for counting."""
    out, depth = [], 0
    for ch in path:
        if ch == "[":
            depth += 1
            out.append("[*]")
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


@dataclass
class NormalizeStats:
    """Check counts are of affected episodes (and of question rows, for questions)."""

    checks: Counter[str] = field(default_factory=Counter)
    question_checks: Counter[str] = field(default_factory=Counter)
    extra_fields: Counter[str] = field(default_factory=Counter)
    bounded_hook_values: int = 0
    duplicate_keys: Counter[str] = field(default_factory=Counter)  # generic JSON paths


# The tables one episode adds rows to, in the order ``EpisodeInfo.counts`` counts them.
EPISODE_TABLES = ("episodes", "traces", "turns", "hooks", "corrections", "messages")
# The episodes row is built without ``checks``, which needs build-wide state (ground truth).
EPISODES_WITHOUT_CHECKS = TABLES["episodes"].remove(TABLES["episodes"].get_field_index("checks"))
Rows = dict[str, list[tuple[Any, ...]]]


def _row_type(name: str, schema: pa.Schema) -> Any:
    """A tuple type whose fields are the schema's columns, in order: every row names each
    of its values, so a column added, moved or renamed in ``schemas.tables`` cannot shift
    the values of a row into the wrong columns. ``name`` is the module attribute it is
    bound to, so rows pickle."""
    return namedtuple(name, schema.names)  # type: ignore[misc]


QuestionRow = _row_type("QuestionRow", TABLES["questions"])
EpisodeRow = _row_type("EpisodeRow", EPISODES_WITHOUT_CHECKS)
CheckedEpisodeRow = _row_type("CheckedEpisodeRow", TABLES["episodes"])
TraceRow = _row_type("TraceRow", TABLES["traces"])
TurnRow = _row_type("TurnRow", TABLES["turns"])
HookRow = _row_type("HookRow", TABLES["hooks"])
CorrectionRow = _row_type("CorrectionRow", TABLES["corrections"])
MessageRow = _row_type("MessageRow", TABLES["messages"])
Dump = Callable[[Any], str]


def _json(value: Any) -> str:
    """``canonical_json`` of a value decoded from JSON text (dict/list/str/int/float/bool/
    None, finite floats only): ``normalize_value`` is the identity on those, so this is the
    same text without the walk."""
    return _dumps(value, sort_keys=True)


def _value(model: Any, name: str) -> Any:
    value = getattr(model, name)
    return None if value is UNSET else value


def _present(model: Any, name: str) -> bool:
    if isinstance(model, FastRecord):
        return getattr(model, name) is not UNSET
    return name in model.model_fields_set


def _json_text(model: Any, name: str, dump: Dump = canonical_json) -> str | None:
    return dump(getattr(model, name)) if _present(model, name) else None


def question_row(
    question: Any, source: str, file: str, line: int, precision: int | None = None
) -> tuple[Any, ...]:
    """A ``questions`` row; its integrity checks (pure) are the last column."""
    return QuestionRow(
        question_id=question.id,
        question_text=question.question_text,
        normalized_text=normalize_question_text(question.question_text),
        hint=question.hint,
        difficulty=question.difficulty,
        n_steps=question.n_steps,
        created_at=utc(question.created_at),
        source=source,
        ground_truth=_json_text(question, "ground_truth"),
        ground_truth_hash=question.ground_truth_hash,
        ground_truth_hashes=question.ground_truth_hashes,
        capture_id=question.capture_id,
        category=question.category,
        tags=question.tags,
        template_name=question.template_name,
        template_params=_json_text(question, "template_params"),
        output_type=question.output_type,
        output_schema=_json_text(question, "output_schema"),
        source_file=file,
        source_line=line,
        checks=checks.check_question(question, precision),
    )


@dataclass(slots=True)
class EpisodeInfo:
    """What the build-wide commit needs of one normalized episode (rows live in tables)."""

    number: int
    episode_id: str
    question_id: str
    question_gt_hash: str | None
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
) -> EpisodeInfo:
    """Append one episode's rows (every table but ``questions``) to ``out``; pure.

    ``ep`` is a pydantic ``Episode`` or its fast-path twin (``builder.fastpath``), whose
    any-typed values are decoded JSON, so their canonical text skips ``normalize_value``."""
    dump: Dump = _json if isinstance(ep, FastRecord) else canonical_json
    before = tuple(len(out[t]) for t in EPISODE_TABLES)
    failed: list[str] = checks.check_question(ep.question, precision)
    if duplicates:
        failed.append(checks.DUPLICATE_JSON_KEY)
    question_checks = list(failed)
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
    votes = checks.consensus(ep.consistency_traces)
    by_ground_truth = LAYOUTS_BY_NAME[layout].ground_truth_evidence and not ep.consistency_traces
    if by_ground_truth:
        verified = checks.verified_by_ground_truth(ep)
    else:
        verified = checks.recompute_verified(ep, votes)
    if ep.verified and not verified:
        failed.append(checks.VERIFIED_MISMATCH)
    failed += checks.check_triangulation(ep, votes, by_ground_truth)
    rl = ep.rl_verification_data
    expected = _json_text(rl, "expected_final_answer", dump) if rl is not None else None
    failed += checks.check_expected_answer(ep, expected, precision)
    extras = dict(extra_fields(ep)) if ep.model_extra is not None else {}
    if extras and layout != SEEDS.name:  # paths as the line's own layout spells them
        extras = {layout_path(layout, path): value for path, value in extras.items()}
    _messages(out, ep)
    meta, sft = ep.triangulation_metadata, ep.conversation_for_sft
    out["episodes"].append(
        EpisodeRow(
            episode_id=eid,
            question_id=ep.question.id,
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
            extra_fields=canonical_json(extras) if extras else None,
            layout=layout,
            source_file=file,
            source_line=number,
        )
    )
    return EpisodeInfo(
        number,
        eid,
        ep.question.id,
        checks.ground_truth_for(ep.question, ep.teacher_gold_trace.final_answer_hash),
        ep.teacher_gold_trace.final_answer_hash,
        failed,
        question_checks,
        [generic_path(p) for p in extras],
        bounded,
        tuple(len(out[t]) - b for t, b in zip(EPISODE_TABLES, before, strict=True)),
        sorted({generic_path(p) for p in duplicates}),
    )


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
    answer = dump(_value(trace, "final_answer"))
    failed = checks.check_final_answer(trace, answer, precision)
    turns = trace.turns or []
    failed += checks.check_corrections(turns)
    n_turns = _turns(out, trace_id, episode_id, trace, dump)
    hook_rows, hook_checks, bounded = _hooks(out, trace_id, episode_id, trace, limit, dump)
    failed += hook_checks
    out["traces"].append(
        TraceRow(
            trace_id=trace_id,
            episode_id=episode_id,
            role=role,
            trace_index=index,
            form="turns" if trace.turns else "flat",
            execution_success=trace.execution_success,
            submitted=checks.is_submitted(trace),
            final_answer=answer if _present(trace, "final_answer") else None,
            final_answer_hash=trace.final_answer_hash,
            submission_metadata=dump(trace.submission_metadata),
            total_turns=trace.total_turns,
            archived_turn_count=trace.archived_turn_count,
            n_turns=n_turns,
            n_hooks=hook_rows,
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
        submitted = _present(ex, "submitted_answer")
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


def _hooks(
    out: Rows, trace_id: str, episode_id: str, trace: Any, limit: int, dump: Dump
) -> tuple[int, list[str], int]:
    """One row per checkpoint. When a trace lists hooks both per turn and at trace level,
    the listings describe the same checkpoints: they are merged by (name, occurrence),
    and any disagreement is a ``hook_listing_mismatch``."""
    listed: list[tuple[int | None, Hook, str]] = [
        (turn.turn_index, hook, "turn")
        for turn in trace.turns or []
        for hook in turn.execution.hooks
    ]
    failed: list[str] = []
    if listed and trace.hooks:
        listed, mismatch = _merge_listings(listed, trace.hooks)
        if mismatch:
            failed.append(checks.HOOK_LISTING_MISMATCH)
    elif trace.hooks:
        listed = [(None, hook, "trace") for hook in trace.hooks]
    failed += checks.check_hook_dag((hook_name(h), h.depends_on) for _, h, _ in listed)
    rows = out["hooks"]
    n_bounded = 0
    for i, (turn_index, hook, listed_in) in enumerate(listed):
        value = _json_text(hook, "value", dump)
        bounded = False
        if value is not None:
            value, bounded = bound_stored_value(value, limit)
            n_bounded += bounded
        rows.append(
            HookRow(
                trace_id=trace_id,
                hook_index=i,
                episode_id=episode_id,
                turn_index=turn_index,
                name=hook_name(hook),
                code_line=hook.code_line,
                variable_name=hook.variable_name,
                value_hash=hook.value_hash,
                value=value,
                value_bounded=bounded,
                description=hook.description,
                depends_on=hook.depends_on,
                listed_in=listed_in,
            )
        )
    return len(listed), failed, n_bounded


def _messages(out: Rows, ep: Any) -> None:
    if ep.conversation_for_sft is None:
        return
    rows = out["messages"]
    eid = ep.episode_id
    for i, msg in enumerate(ep.conversation_for_sft.messages):
        text = msg.content if isinstance(msg.content, str) else None
        parts = None if text is not None or msg.content is None else canonical_json(msg.content)
        extra = msg.model_extra
        calls = tool_calls(msg.tool_calls)
        rows.append(
            MessageRow(
                episode_id=eid,
                message_index=i,
                role=msg.role,
                content=text,
                content_parts=parts,
                tool_calls=None if calls is None else canonical_json(calls),
                tool_call_id=msg.tool_call_id,
                name=msg.name,
                extra_fields=canonical_json(extra) if extra else None,
            )
        )


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else canonical_json(value)


def tool_calls(value: Any) -> list[dict[str, Any]] | None:
    """OpenAI ``tool_calls`` as ``{id, type, function {name, arguments}}``; ``arguments``
    stays the JSON text OpenAI sends (an object is written as its canonical JSON)."""
    if not isinstance(value, list):
        return None
    calls = []
    for call in value:
        call = call if isinstance(call, dict) else {}
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments")
        calls.append(
            {
                "id": _text(call.get("id")),
                "type": _text(call.get("type", "function")),
                "function": {
                    "name": _text(function.get("name")),
                    "arguments": None if arguments is None else _text(arguments),
                },
            }
        )
    return calls


def to_table(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    """Rows (tuples in ``schema`` column order: the row types above) to one Arrow table,
    column by column."""
    if not rows:
        return empty_table(schema)
    columns = zip(*rows, strict=True)
    arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def empty_rows() -> Rows:
    return {t: [] for t in TABLES}


@dataclass
class Normalizer:
    """Build-wide normalize state: question ids seen (first source wins), ground truth
    learned so far, and the counts for the manifest. Rows come from the pure
    ``emit_episode``; what depends on earlier lines is decided in ``commit``."""

    hook_value_limit: int = 100_000
    hash_precision: int | None = None
    ground_truth: dict[str, str] = field(default_factory=dict)  # question id -> answer hash
    stats: NormalizeStats = field(default_factory=NormalizeStats)
    # question ids seen, in the order first seen (``builder.segments`` takes a segment's)
    seen_questions: dict[str, None] = field(default_factory=dict)
    _rows: Rows = field(default_factory=empty_rows)

    def question(self, question: Question, source: str, file: str, line: int) -> None:
        """Add a question row unless its id is already present (first source wins)."""
        if question.id in self.seen_questions:
            return
        row = question_row(question, source, file, line, self.hash_precision)
        self.learn_question(question.id, question.ground_truth_hash, row.checks)
        self._rows["questions"].append(row)

    def learn_question(self, qid: str, gt_hash: str | None, failed: list[str]) -> bool:
        """Record a question id; False when it was seen before (its row is then dropped)."""
        if qid in self.seen_questions:
            return False
        self.seen_questions[qid] = None
        if gt_hash is not None:
            self.ground_truth.setdefault(qid, gt_hash)
        self.stats.question_checks.update(failed)
        return True

    def forget_question(self, qid: str, gt_hash: str | None) -> None:
        """Undo ``learn_question`` (a ``--strict`` reject); its counts stay, as before."""
        self.seen_questions.pop(qid, None)
        if gt_hash is not None and self.ground_truth.get(qid) == gt_hash:
            del self.ground_truth[qid]

    def commit(self, info: EpisodeInfo) -> tuple[list[str], bool]:
        """Build-wide part of one episode: (its sorted failed checks, whether its question
        row is the first of that id)."""
        new_question = self.learn_question(
            info.question_id, info.question_gt_hash, info.question_checks
        )
        ground_truth = info.question_gt_hash or self.ground_truth.get(info.question_id)
        failed = info.checks + ground_truth_checks(info.gold_hash, ground_truth)
        episode_checks = sorted(set(failed))
        self.stats.checks.update(episode_checks)
        self.stats.extra_fields.update(info.extra_paths)
        self.stats.bounded_hook_values += info.bounded
        self.stats.duplicate_keys.update(info.duplicate_keys)
        return episode_checks, new_question

    def mark(self) -> dict[str, int]:
        """A restore point for ``rollback`` (used by ``--strict`` to drop a flagged episode)."""
        return {name: len(rows) for name, rows in self._rows.items()}

    def rollback(self, mark: dict[str, int]) -> None:
        for row in self._rows["questions"][mark["questions"] :]:
            self.forget_question(row.question_id, row.ground_truth_hash)
        for name, rows in self._rows.items():
            del rows[mark[name] :]

    def episode(self, valid: Valid[Episode]) -> list[str]:
        """Add the episode's rows; returns the integrity checks that failed (sorted)."""
        line = valid.line
        info = emit_episode(
            valid.record,
            line.path,
            line.number,
            self.hook_value_limit,
            self._rows,
            self.hash_precision,
            valid.layout,
            duplicate_keys(line.raw),
        )
        episode_checks, new_question = self.commit(info)
        episodes = self._rows["episodes"]
        episodes[-1] = CheckedEpisodeRow(*episodes[-1], checks=episode_checks)
        if new_question:
            row = question_row(
                valid.record.question, "episode", line.path, line.number, self.hash_precision
            )
            self._rows["questions"].append(row)
        return episode_checks

    def take_tables(self) -> dict[str, pa.Table]:
        """The rows gathered since the last call, as Arrow tables of the declared schemas."""
        tables = {name: to_table(rows, TABLES[name]) for name, rows in self._rows.items()}
        self._rows = empty_rows()
        return tables


def _merge_listings(
    turn_hooks: list[tuple[int | None, Hook, str]], trace_hooks: list[Hook]
) -> tuple[list[tuple[int | None, Hook, str]], bool]:
    def keyed(hooks: list[Hook]) -> dict[tuple[str, int], Hook]:
        seen: Counter[str] = Counter()
        out = {}
        for hook in hooks:
            name = hook_name(hook)
            out[(name, seen[name])] = hook
            seen[name] += 1
        return out

    at_trace = keyed(trace_hooks)
    at_turns = keyed([h for _, h, _ in turn_hooks])
    merged: list[tuple[int | None, Hook, str]] = []
    mismatch = at_trace.keys() != at_turns.keys()
    for (turn_index, hook, _), key in zip(turn_hooks, at_turns, strict=True):
        twin = at_trace.get(key)
        if twin is not None and (twin.value_hash, twin.code_line) != (
            hook.value_hash,
            hook.code_line,
        ):
            mismatch = True
        merged.append((turn_index, hook, "both" if twin is not None else "turn"))
    merged += [(None, h, "trace") for key, h in at_trace.items() if key not in at_turns]
    return merged, mismatch
