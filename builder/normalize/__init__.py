"""Normalize stage: validated episodes become rows of the relational tables in ``schemas.tables``.

Nested lists become child tables keyed by parent id and list index. Any-typed values are
stored as canonical JSON text, hashed once from that same text. Integrity checks run here,
per episode, because everything they need is on the episode's own line (plus the question
banks, loaded before any episode).

* ``episode``: one episode's rows and checks, pure (it runs in the ingest's workers), with
  ``hooks`` (the checkpoints of a trace) and ``messages`` (the SFT conversation);
* ``questions``: a ``questions`` row; ``values``: how a record's values are stored;
* ``rows``: the row type of each table, and rows to Arrow;
* here, ``Normalizer``: the build-wide state (question ids seen, ground truth learned) and
  what depends on earlier lines.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

from builder.normalize.episode import EpisodeInfo, emit_episode, ground_truth_checks
from builder.normalize.questions import question_row
from builder.normalize.rows import CheckedEpisodeRow, Rows, empty_rows, to_table
from builder.validate.json_lines import duplicate_keys
from builder.validate.validator import Valid
from schemas.episode import Episode, Question
from schemas.tables import TABLES
from schemas.vocabulary import GROUND_TRUTH_MISMATCH


@dataclass
class NormalizeStats:
    """Check counts are of affected episodes (and of question rows, for questions)."""

    checks: Counter[str] = field(default_factory=Counter)
    question_checks: Counter[str] = field(default_factory=Counter)
    extra_fields: Counter[str] = field(default_factory=Counter)
    bounded_hook_values: int = 0
    duplicate_keys: Counter[str] = field(default_factory=Counter)  # generic JSON paths


@dataclass
class Normalizer:
    """Build-wide normalize state: question ids seen (first source wins), ground truth
    learned so far, and the counts for the manifest. Rows come from the pure
    ``emit_episode``; what depends on earlier lines is decided in ``commit``."""

    hook_value_limit: int = 100_000
    hash_precision: int | None = None
    answer_tolerance: float | None = None
    ground_truth: dict[str, str] = field(default_factory=dict)  # question id -> answer hash
    stats: NormalizeStats = field(default_factory=NormalizeStats)
    # question ids seen, in the order first seen (``builder.cache.segments`` takes a segment's)
    seen_questions: dict[str, None] = field(default_factory=dict)
    _rows: Rows = field(default_factory=empty_rows)

    def question(
        self, question: Question, source: str, file: str, line: int, strict: bool = False
    ) -> list[str]:
        """Add a question row unless its id is already present (first source wins); returns
        its failed integrity checks. With ``strict``, a question that fails one is not added
        (the caller rejects it)."""
        row = question_row(question, source, file, line, self.hash_precision)
        if row.question_id in self.seen_questions:
            return []
        if strict and row.checks:
            return row.checks
        self.learn_question(row.question_id, question.ground_truth_hash, row.checks)
        self._rows["questions"].append(row)
        return row.checks

    def learn_question(self, qid: str, gt_hash: str | None, failed: list[str]) -> bool:
        """Record a question id; False when it was seen before (its row is then dropped)."""
        if qid in self.seen_questions:
            return False
        self.seen_questions[qid] = None
        # A ground_truth_hash that is not its ground truth's judges no episode: which of the
        # two is wrong is not known.
        if gt_hash is not None and GROUND_TRUTH_MISMATCH not in failed:
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
            tolerance=self.answer_tolerance,
            raw=line.raw,
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
