"""Normalize stage: validated episodes become rows of the relational tables in ``schemas.tables``.

Nested lists become child tables keyed by parent id and list index. Any-typed values are
stored as canonical JSON text, hashed once from that same text. Integrity checks run here,
per episode, because everything they need is on the episode's own line (plus the question
banks, loaded before any episode).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from pydantic import BaseModel

from builder import checks
from builder.hashing import canonical_json, hash_canonical_json, normalize_question_text
from builder.summaries import bound_stored_value
from builder.validate import Valid
from schemas.episode import Episode, ExecutionTrace, Hook, Question
from schemas.tables import TABLES

Row = dict[str, Any]


def utc(moment: datetime | None) -> datetime | None:
    """Naive capture times are read as UTC so the column has one time zone."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def json_text(model: BaseModel, name: str) -> str | None:
    """Canonical JSON of an Any-typed field; None when the field was absent from the input."""
    return canonical_json(getattr(model, name)) if name in model.model_fields_set else None


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


@dataclass
class Normalizer:
    """Turns validated records into table rows; one instance per build."""

    hook_value_limit: int = 100_000
    ground_truth: dict[str, str] = field(default_factory=dict)  # question id -> answer hash
    stats: NormalizeStats = field(default_factory=NormalizeStats)
    _seen_questions: set[str] = field(default_factory=set)
    _rows: dict[str, list[Row]] = field(default_factory=lambda: {t: [] for t in TABLES})

    def question(self, question: Question, source: str, file: str, line: int) -> None:
        """Add a question row unless its id is already present (first source wins)."""
        if question.id in self._seen_questions:
            return
        self._seen_questions.add(question.id)
        failed = checks.check_question(question)
        if question.ground_truth_hash is not None:
            self.ground_truth.setdefault(question.id, question.ground_truth_hash)
        self.stats.question_checks.update(failed)
        self._rows["questions"].append(
            {
                "question_id": question.id,
                "question_text": question.question_text,
                "normalized_text": normalize_question_text(question.question_text),
                "hint": question.hint,
                "difficulty": question.difficulty,
                "n_steps": question.n_steps,
                "created_at": utc(question.created_at),
                "source": source,
                "ground_truth": json_text(question, "ground_truth"),
                "ground_truth_hash": question.ground_truth_hash,
                "source_file": file,
                "source_line": line,
                "checks": failed,
            }
        )

    def mark(self) -> dict[str, int]:
        """A restore point for ``rollback`` (used by ``--strict`` to drop a flagged episode)."""
        return {name: len(rows) for name, rows in self._rows.items()}

    def rollback(self, mark: dict[str, int]) -> None:
        for row in self._rows["questions"][mark["questions"] :]:
            self._seen_questions.discard(row["question_id"])
            learned = row["ground_truth_hash"]
            if learned is not None and self.ground_truth.get(row["question_id"]) == learned:
                del self.ground_truth[row["question_id"]]
        for name, rows in self._rows.items():
            del rows[mark[name] :]

    def episode(self, valid: Valid[Episode]) -> list[str]:
        """Add the episode's rows; returns the integrity checks that failed (sorted)."""
        ep, line = valid.record, valid.line
        self.question(ep.question, "episode", line.path, line.number)
        failed: list[str] = checks.check_question(ep.question)
        traces = [("gold", 0, ep.teacher_gold_trace)]
        traces += [("consistency", i, t) for i, t in enumerate(ep.consistency_traces)]
        for role, index, trace in traces:
            failed += self._trace(ep.episode_id, role, index, trace)
        votes = checks.consensus(ep.consistency_traces)
        verified = checks.recompute_verified(ep, votes)
        if ep.verified and not verified:
            failed.append(checks.VERIFIED_MISMATCH)
        failed += checks.check_triangulation(ep, votes)
        ground_truth = ep.question.ground_truth_hash or self.ground_truth.get(ep.question.id)
        failed += checks.check_ground_truth(ep, ground_truth)
        rl = ep.rl_verification_data
        expected = json_text(rl, "expected_final_answer") if rl is not None else None
        if rl is not None:
            answer_hash = hash_canonical_json(expected or canonical_json(None))
            failed += checks.check_expected_answer(ep, answer_hash)
        episode_checks = sorted(set(failed))
        self.stats.checks.update(episode_checks)
        extras = dict(extra_fields(ep))
        self.stats.extra_fields.update(generic_path(p) for p in extras)
        self._messages(ep)
        meta, sft = ep.triangulation_metadata, ep.conversation_for_sft
        self._rows["episodes"].append(
            {
                "episode_id": ep.episode_id,
                "question_id": ep.question.id,
                "timestamp": utc(ep.timestamp),
                "verified": ep.verified,
                "verified_recomputed": verified,
                "system_prompt": sft.system_prompt if sft else None,
                "n_messages": len(sft.messages) if sft else None,
                "expected_final_answer": expected,
                "expected_final_answer_hash": rl.expected_final_answer_hash if rl else None,
                "n_consistency_traces": len(ep.consistency_traces),
                "n_consistency_runs": meta.n_consistency_runs if meta else None,
                "n_consistency_succeeded": meta.n_consistency_succeeded if meta else None,
                "majority_answer_hash": meta.majority_answer_hash if meta else None,
                "majority_count": meta.majority_count if meta else None,
                "gold_matches_majority": meta.gold_matches_majority if meta else None,
                "extra_fields": canonical_json(extras) if extras else None,
                "source_file": line.path,
                "source_line": line.number,
                "checks": episode_checks,
            }
        )
        return episode_checks

    def _trace(self, episode_id: str, role: str, index: int, trace: ExecutionTrace) -> list[str]:
        trace_id = f"{episode_id}:gold" if role == "gold" else f"{episode_id}:c{index}"
        answer = canonical_json(trace.final_answer)
        failed = checks.check_final_answer(trace, hash_canonical_json(answer))
        turns = trace.turns or []
        failed += checks.check_corrections(turns)
        n_turns = self._turns(trace_id, episode_id, trace)
        hook_rows, hook_checks = self._hooks(trace_id, episode_id, trace)
        failed += hook_checks
        self._rows["traces"].append(
            {
                "trace_id": trace_id,
                "episode_id": episode_id,
                "role": role,
                "trace_index": index,
                "form": "turns" if trace.turns else "flat",
                "execution_success": trace.execution_success,
                "submitted": checks.is_submitted(trace),
                "final_answer": answer if "final_answer" in trace.model_fields_set else None,
                "final_answer_hash": trace.final_answer_hash,
                "submission_metadata": canonical_json(trace.submission_metadata),
                "total_turns": trace.total_turns,
                "archived_turn_count": trace.archived_turn_count,
                "n_turns": n_turns,
                "n_hooks": hook_rows,
                "checks": failed,
            }
        )
        return failed

    def _turns(self, trace_id: str, episode_id: str, trace: ExecutionTrace) -> int:
        rows = self._rows["turns"]
        if not trace.turns:
            for i, code in enumerate(trace.code_cells):
                rows.append(
                    {
                        "trace_id": trace_id,
                        "turn_index": i,
                        "episode_id": episode_id,
                        "code": code,
                        "submitted": False,
                        "has_correction": False,
                        "n_hooks": 0,
                    }
                )
            return len(trace.code_cells)
        for turn in trace.turns:
            ex = turn.execution
            submitted = "submitted_answer" in ex.model_fields_set
            rows.append(
                {
                    "trace_id": trace_id,
                    "turn_index": turn.turn_index,
                    "episode_id": episode_id,
                    "reasoning": turn.reasoning,
                    "code": turn.code,
                    "success": ex.success,
                    "stdout": ex.stdout,
                    "stderr": ex.stderr,
                    "submitted": submitted,
                    "submitted_answer": canonical_json(ex.submitted_answer) if submitted else None,
                    "has_correction": turn.correction is not None,
                    "n_hooks": len(ex.hooks),
                }
            )
            if turn.correction is not None:
                c = turn.correction
                self._rows["corrections"].append(
                    {
                        "trace_id": trace_id,
                        "turn_index": turn.turn_index,
                        "episode_id": episode_id,
                        "corrects_turn": c.corrects_turn,
                        "error_type": c.error_type,
                        "error_message": c.error_message,
                        "attempts_since_error": c.attempts_since_error,
                        "removed_lines": c.code_diff.removed_lines,
                        "added_lines": c.code_diff.added_lines,
                    }
                )
        return len(trace.turns)

    def _hooks(
        self, trace_id: str, episode_id: str, trace: ExecutionTrace
    ) -> tuple[int, list[str]]:
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
        rows = self._rows["hooks"]
        for i, (turn_index, hook, listed_in) in enumerate(listed):
            value = json_text(hook, "value")
            bounded = False
            if value is not None:
                value, bounded = bound_stored_value(value, self.hook_value_limit)
                self.stats.bounded_hook_values += bounded
            rows.append(
                {
                    "trace_id": trace_id,
                    "hook_index": i,
                    "episode_id": episode_id,
                    "turn_index": turn_index,
                    "name": hook_name(hook),
                    "code_line": hook.code_line,
                    "variable_name": hook.variable_name,
                    "value_hash": hook.value_hash,
                    "value": value,
                    "value_bounded": bounded,
                    "description": hook.description,
                    "depends_on": hook.depends_on,
                    "listed_in": listed_in,
                }
            )
        return len(listed), failed

    def _messages(self, ep: Episode) -> None:
        if ep.conversation_for_sft is None:
            return
        rows = self._rows["messages"]
        for i, msg in enumerate(ep.conversation_for_sft.messages):
            text = msg.content if isinstance(msg.content, str) else None
            parts = None if text is not None or msg.content is None else canonical_json(msg.content)
            rows.append(
                {
                    "episode_id": ep.episode_id,
                    "message_index": i,
                    "role": msg.role,
                    "content": text,
                    "content_parts": parts,
                    "extra_fields": canonical_json(msg.model_extra) if msg.model_extra else None,
                }
            )

    def take_tables(self) -> dict[str, pa.Table]:
        """The rows gathered since the last call, as Arrow tables of the declared schemas."""
        tables = {
            name: pa.Table.from_pylist(rows, schema=TABLES[name])
            for name, rows in self._rows.items()
        }
        self._rows = {t: [] for t in TABLES}
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
