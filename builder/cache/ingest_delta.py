"""One segment's share of the ingest's build-wide state: taken after a segment is read
(``mark``, then ``delta``), stored with the segment, and applied to a later build's ingest
(``restore``) when the segment is reused instead of read.

What a segment writes depends only on its own input and on the build-wide state left by the
segments before it (episode ids seen, questions seen and their ground truth, the secret values
to redact), so this share and the segment's files are all a rebuild needs from it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from builder.ingest.results import FileCounts
from builder.sources.inputs import InputStats


@dataclass
class IngestDelta:
    """One segment's share of the ingest's build-wide state and counts."""

    files: list[dict[str, Any]] = field(default_factory=list)  # per input: kind, counts, stats
    rows: dict[str, int] = field(default_factory=dict)  # staging rows by table
    checks: dict[str, int] = field(default_factory=dict)
    question_checks: dict[str, int] = field(default_factory=dict)
    extra_fields: dict[str, int] = field(default_factory=dict)
    bounded_hook_values: int = 0
    duplicate_keys: dict[str, int] = field(default_factory=dict)
    first_seen: list[tuple[str, str, int, int]] = field(default_factory=list)
    questions: list[tuple[str, str | None]] = field(default_factory=list)
    rejects: list[tuple[str, bytes]] = field(default_factory=list)

    def counts_json(self) -> dict[str, Any]:
        fields = ("files", "rows", "checks", "question_checks", "extra_fields", "duplicate_keys")
        out: dict[str, Any] = {name: getattr(self, name) for name in fields}
        out["bounded_hook_values"] = self.bounded_hook_values
        return out


def _after(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


@dataclass
class Mark:
    """The ingest's state just before a segment (``mark``), to take its delta from."""

    inputs: int
    first_seen: int
    questions: int
    rows: Counter[str]
    checks: Counter[str]
    question_checks: Counter[str]
    extra_fields: Counter[str]
    bounded_hook_values: int
    duplicate_keys: Counter[str]


def mark(job: Any) -> Mark:
    """``job``: a ``builder.ingest.files.Ingest`` between two segments. Its rejects are captured
    from here on, for ``delta``."""
    stats = job.normalizer.stats
    job.rejects.capture()
    return Mark(
        len(job.result.inputs),
        len(job.first_seen),
        len(job.normalizer.seen_questions),
        Counter(job.sink.rows),
        Counter(stats.checks),
        Counter(stats.question_checks),
        Counter(stats.extra_fields),
        stats.bounded_hook_values,
        Counter(stats.duplicate_keys),
    )


def delta(job: Any, since: Mark) -> IngestDelta:
    """What ``job`` added since ``since``. Ids and questions are only ever added (a
    ``--strict`` reject forgets the question it added last), so the new ones are the
    dicts' last entries, in insertion order."""
    stats, result = job.normalizer.stats, job.result
    files = []
    for source in result.inputs[since.inputs :]:
        counts = result.counts[source.path]
        files.append(
            {
                "path": source.path,
                "kind": result.kinds[source.path],
                "valid": counts.valid,
                "rejected": counts.rejected,
                "blank": counts.blank,
                "sha256": source.sha256,
                "bytes": source.bytes,
                "lines": source.lines,
            }
        )
    seen = _last(job.normalizer.seen_questions, since.questions)
    truth = job.normalizer.ground_truth
    first_seen = _last(job.first_seen, since.first_seen)
    return IngestDelta(
        files=files,
        rows=_after(since.rows, Counter(job.sink.rows)),
        checks=_after(since.checks, stats.checks),
        question_checks=_after(since.question_checks, stats.question_checks),
        extra_fields=_after(since.extra_fields, stats.extra_fields),
        bounded_hook_values=stats.bounded_hook_values - since.bounded_hook_values,
        duplicate_keys=_after(since.duplicate_keys, stats.duplicate_keys),
        first_seen=[(episode, *place) for episode, place in first_seen],
        questions=[(qid, truth.get(qid)) for qid, _ in seen],
        rejects=job.rejects.captured(),
    )


def _last(entries: dict[Any, Any], before: int) -> list[tuple[Any, Any]]:
    """The entries added after the first ``before``, oldest first, without walking the
    older ones."""
    new = reversed(entries.items())
    return list(reversed([next(new) for _ in range(len(entries) - before)]))


def restore(job: Any, name: str, stored: IngestDelta) -> None:
    """Apply a stored segment's delta to ``job``, as if it had read the segment."""
    result, normalizer = job.result, job.normalizer
    for f in stored.files:
        result.kinds[f["path"]] = f["kind"]
        counts = result.counts.setdefault(f["path"], FileCounts())
        counts.valid += f["valid"]
        counts.rejected += f["rejected"]
        counts.blank += f["blank"]
        result.inputs.append(InputStats(f["path"], f["sha256"], f["bytes"], f["lines"]))
        if job.on_bytes is not None:
            job.on_bytes(f["bytes"])
    job.sink.rows.update(stored.rows)
    stats = normalizer.stats
    stats.checks.update(stored.checks)
    stats.question_checks.update(stored.question_checks)
    stats.extra_fields.update(stored.extra_fields)
    stats.bounded_hook_values += stored.bounded_hook_values
    stats.duplicate_keys.update(stored.duplicate_keys)
    for episode, path, line, item in stored.first_seen:
        job.first_seen.setdefault(episode, (path, line, item))
    for qid, truth in stored.questions:
        normalizer.seen_questions[qid] = None
        if truth is not None:
            normalizer.ground_truth.setdefault(qid, truth)
    job.rejects.add_lines(stored.rejects)
