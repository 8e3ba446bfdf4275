"""One segment of the dataset: every config's rows that come from one input.

A segment is the question banks (``00000``), one episode file (``00001``, ...) or the
sessions (``sessions``), as cut by the ingest (``builder.ingest``). Its files are
``{config}/{split}-{segment}-NNNNN-of-NNNNN.parquet``, and they depend only on its own
input and on what came before it (the questions its episodes refer to, as the earlier
segments published them), so appending an input file leaves every earlier segment's files
byte for byte as they were (``builder.cache.segments`` reuses them instead of rebuilding).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from builder.config import BuildConfig
from builder.derive import RESHAPED, DeriveOptions, derived_from_tables, reshaped, shared
from builder.derive.eligibility import exclusion_counts
from builder.derive.options import PLAN_ENGINE
from builder.derive.splits import SplitConfig
from builder.derive.splits.plan import HeldOutPlan
from builder.engine import ThreadEngine, default_workers
from builder.export.buckets import LOOKUP, LOOKUP_COLUMNS, Bucket, Redact, load
from builder.export.held_out import held_out_keys, mark_held, parted, removed_rows, without
from builder.export.manifest import SplitTally
from builder.export.writer import ConfigWriter, SplitKeys
from builder.fs.parquet import CONVERSATION_GROUP_ROWS, TABLE_GROUP_ROWS, split_group_rows
from schemas.objectives import OBJECTIVES
from schemas.sessions import SESSION_TABLES
from schemas.tables import SPLIT_ASSIGNMENT, TABLES
from schemas.vocabulary import HOOK_ONLY, REASONS

SESSION_SEGMENT = "sessions"


@dataclass
class SegmentOutput:
    """What one segment wrote, and its share of the manifest's counts. Stored with a
    reused segment (``builder.cache.segments``), so a rebuild need not read its files."""

    name: str
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # config -> split -> rows
    files: dict[str, str] = field(default_factory=dict)  # dataset-relative path -> sha256
    questions_per_split: dict[str, int] = field(default_factory=dict)
    assignment_sha256: str = ""  # of its ``question_id<TAB>split`` lines, in id order
    excluded: dict[str, int] = field(default_factory=dict)  # training exclusions by reason
    # config -> reason -> rows held out of it (``bridges_splits``, ``eval:<name>``)
    held_out: dict[str, dict[str, int]] = field(default_factory=dict)
    redactions: dict[str, int] = field(default_factory=dict)  # replacements by kind
    secret_values: list[str] = field(default_factory=list)  # redacted from here on
    # dataset-relative path -> characters per row, counted as written (``writer.row_chars``),
    # for the card; not stored: a reused segment's are in the card's memo, or counted again.
    row_chars: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def tallied(self, tally: SplitTally) -> SegmentOutput:
        """With the split facts of ``tally`` (its questions' splits, in id order)."""
        self.questions_per_split = dict(sorted(tally.counts.items()))
        self.assignment_sha256 = tally.sha256
        return self

    def to_json(self) -> dict[str, Any]:
        data = asdict(replace(self, row_chars={}))
        del data["row_chars"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SegmentOutput:
        return cls(**data)


class SegmentWriters:
    """The segment's ``ConfigWriter`` of every config, created as configs get rows."""

    def __init__(self, out: Path, segment: str, config: BuildConfig) -> None:
        self.out, self.segment, self.max_rows = out, segment, config.parquet_max_rows_per_file
        self.shares = SplitConfig.of(config).shares()
        self.open: dict[str, ConfigWriter] = {}

    def write(self, name: str, schema: pa.Schema, group_rows: int, piece: pl.DataFrame) -> None:
        if piece.height:
            self.writer(name, schema, group_rows).write(piece)

    def writer(self, name: str, schema: pa.Schema, group_rows: int) -> ConfigWriter:
        """``name``'s writer, created on first use. Writers are created on one thread, in
        config order, so the manifest lists them in the same order whatever thread writes."""
        if name not in self.open:
            groups = split_group_rows(group_rows, self.shares)
            self.open[name] = ConfigWriter(
                self.out, name, schema, self.max_rows, groups, self.segment
            )
        return self.open[name]

    def close(
        self,
        output: SegmentOutput,
        names: Iterable[str] | None = None,
        pool: Executor | None = None,
    ) -> SegmentOutput:
        """Close the writers of ``names`` (default: every one still open) into ``output``,
        on ``pool``'s threads when given (a close writes the last row groups, the footers
        and hashes the files: mostly work that releases the GIL); ``output`` lists them in
        config order either way."""
        closing = [
            (n, self.open.pop(n))
            for n in list(self.open if names is None else names)
            if n in self.open
        ]
        if pool is None:
            rows = [writer.close() for _, writer in closing]
        else:
            jobs = [pool.submit(writer.close) for _, writer in closing]
            wait(jobs)  # every close finishes before the first error is raised
            rows = [job.result() for job in jobs]
        for (name, writer), counts in zip(closing, rows, strict=True):
            output.rows[name] = {s: n for s, n in counts.items() if n}
            for path in writer.files:
                output.files[str(path.relative_to(self.out))] = writer.digests[path]
            for path, chars in writer.chars.items():
                output.row_chars[str(path.relative_to(self.out))] = chars
        return output


def _layouts() -> dict[str, tuple[pa.Schema, int]]:
    """Every episode config: its schema and row-group size, in the order of the card."""
    layouts = {name: (schema, CONVERSATION_GROUP_ROWS) for name, schema in OBJECTIVES.items()}
    layouts |= {name: (schema, TABLE_GROUP_ROWS) for name, schema in TABLES.items()}
    layouts["splits"] = (SPLIT_ASSIGNMENT, TABLE_GROUP_ROWS)
    return layouts


def write_threads() -> int:
    """Threads writing configs' Parquet: one per available core, and at least two so that
    a large config does not hold back the others."""
    return max(2, default_workers())


class SegmentExporter:
    """Segments exported one after the other, a bucket of question ids at a time. A
    bucket's tables are read into memory once; its questions (its own and those it looks
    up) get their splits; all its configs come from one ``collect_all`` (shared sub-plans
    run once, on Polars' in-memory engine, on every core). A derive thread reads and
    derives one bucket at a time; each bucket's configs are written on another thread while
    the next bucket is derived; that thread hands each config's piece to a pool of writer
    threads, one per available core (Parquet encoding and zstd release the GIL), each config
    on one thread at a time, so every file gets the same bytes in the same order. (Two
    buckets derived at once took no less CPU and about as long, and held a bucket more:
    ≈ 100 MiB at 20,000 episodes of the bench profile.) At most one bucket waits to be
    written. The ``questions`` config is written at once, so the next segment can look its
    questions up."""

    def __init__(self, out: Path, config: BuildConfig, plan: HeldOutPlan) -> None:
        self.out, self.config, self.plan = out, config, plan
        self.options = DeriveOptions(
            dpo_max_pairs_per_episode=config.dpo_max_pairs_per_episode,
            max_output_chars=config.max_output_chars,
            hash_precision=config.hash_precision,
            answer_tolerance=config.answer_tolerance,
        )
        self.layouts = _layouts()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="export-write")
        self._writers = ThreadPoolExecutor(write_threads(), thread_name_prefix="config-write")
        self._derive = ThreadEngine(1, ahead=0, name="derive")
        self._pending: Future[Any] | None = None

    def _submit(self, job: Callable[[], Any]) -> Future[Any]:
        if self._pending is not None:
            self._pending.result()
        self._pending = self._thread.submit(job)
        return self._pending

    def export(
        self, segment: str, parts: list[Bucket], redact: Redact | None = None
    ) -> Future[SegmentOutput]:
        """Segment ``segment``, cut into ``parts``, each redacted as it is read (``redact``);
        its output once its files are written."""
        writers = SegmentWriters(self.out, segment, self.config)
        tally, excluded = SplitTally(), Counter({reason: 0 for reason in (*REASONS, *HOOK_ONLY)})
        held_out: dict[str, Counter[str]] = {}
        for published, exclusions, removed, pieces in self._derive.map(
            self._bucket, ((p, redact) for p in parts)
        ):
            tally.add(published)
            excluded.update(exclusions)
            for name, counts in removed.items():
                held_out.setdefault(name, Counter()).update(counts)
            writers.write("questions", *self.layouts["questions"], pieces.pop("questions"))
            self._submit(functools.partial(self._write_all, writers, pieces))
        output = SegmentOutput(
            segment,
            excluded=dict(excluded),
            held_out={n: dict(sorted(c.items())) for n, c in sorted(held_out.items())},
        ).tallied(tally)
        writers.close(output, ["questions"])
        return self._submit(functools.partial(writers.close, output, pool=self._writers))

    def _bucket(
        self, part: Bucket, redact: Redact | None
    ) -> tuple[pl.DataFrame, dict[str, int], dict[str, dict[str, int]], dict[str, pl.DataFrame]]:
        """One bucket read, redacted and derived (on a derive thread): its questions'
        splits, its training exclusions, the rows held out of each config by reason and
        every config's piece, by config."""
        loaded = load(part, redact)
        own = loaded["questions"].select("question_id", "normalized_text").collect()
        published = self.plan.listed(own)
        looked_up = loaded[LOOKUP].select("question_id", "normalized_text", "split").collect()
        splits = pl.concat([published.select(looked_up.columns), looked_up]).unique(
            "question_id", maintain_order=True
        )
        keys = SplitKeys.of(splits, loaded["episodes"])
        every_question = pl.concat(
            [loaded["questions"].select(LOOKUP_COLUMNS), loaded[LOOKUP].select(LOOKUP_COLUMNS)]
        )
        sources = {**loaded, "questions": every_question.sort("question_id")}
        sources |= shared(sources, self.options)
        held = held_out_keys(self.plan, loaded["episodes"])
        derived = derived_from_tables(sources, self.options)
        if held.height:  # each objective's rows derived once, held-out ones marked, then parted
            derived = {name: mark_held(frame, held) for name, frame in derived.items()}
        frames = derived | {name: loaded[name] for name in TABLES}
        collected = pl.collect_all([keys.attach(f) for f in frames.values()], engine=PLAN_ENGINE)
        pieces = dict(zip(frames, collected, strict=True)) | {"splits": published}
        every = {name: pieces[name] for name in derived}
        counts: dict[str, dict[str, int]] = {}
        for name in derived if held.height else ():
            pieces[name], counts[name] = parted(every[name])
        for name, (source, _) in RESHAPED.items():
            rows = reshaped(name, pieces[source].lazy().drop("split"))
            pieces[name] = keys.attach(rows).collect(engine=PLAN_ENGINE)
            if held.height:  # the source's rows held out, reshaped from the rows derived above
                rows = reshaped(name, every[source].lazy().drop("_held_out", "split"))
                counts[name] = dict(
                    removed_rows(rows, held).collect(engine=PLAN_ENGINE).iter_rows()
                )
        counts = {name: c for name, c in counts.items() if c}
        pieces = {name: pieces[name] for name in self.layouts}
        return published, exclusion_counts(loaded), counts, pieces

    def _write_all(self, writers: SegmentWriters, pieces: dict[str, pl.DataFrame]) -> None:
        # The writers are made in config order (the manifest's); the pieces are handed out
        # largest first, so a large one started last does not leave the other threads idle.
        made = [(writers.writer(n, *self.layouts[n]), p) for n, p in pieces.items() if p.height]
        made.sort(key=lambda item: item[1].estimated_size(), reverse=True)
        jobs = [self._writers.submit(writer.write, piece) for writer, piece in made]
        wait(jobs)  # every write finishes before the first error is raised
        for job in jobs:
            job.result()

    def close(self) -> None:
        try:
            if self._pending is not None:
                self._pending.result()
        finally:
            self._derive.close()
            self._thread.shutdown()
            self._writers.shutdown()


def export_sessions(
    out: Path, sessions: Any, config: BuildConfig, plan: HeldOutPlan
) -> SegmentOutput:
    """The sessions segment (``builder.derive.sessions``: tables in memory): its ``sft``
    and ``self_correction`` rows, the session tables and the split assignment of the
    sessions' questions that no episode segment in ``out`` listed already."""
    ids = sessions.split_texts.select("question_id").unique().sort("question_id")
    keys = SplitKeys.of_questions(plan.split_of(ids))
    published = _frame(sessions.tables["sessions"]).select(
        "question_id", normalized_text="normalized_instruction"
    )
    splits = plan.listed(published.unique("question_id", keep="first", maintain_order=True))
    # A session asked an episode's question: the episodes' segments listed it (in the same
    # split: both are keyed by ``split_key_texts`` of the normalized text as captured), and
    # ``splits`` lists each question once.
    earlier = sorted((out / "splits").glob("*.parquet"))
    if earlier:
        listed = pl.read_parquet(earlier, columns=["question_id"])
        splits = splits.join(listed, on="question_id", how="anti", maintain_order="left")
    writers = SegmentWriters(out, SESSION_SEGMENT, config)
    pieces = {
        "sft": sessions.sft.lazy(),
        "sft_turns": sessions.sft_turns,
        "self_correction": sessions.self_correction.lazy(),
    }
    held = pl.concat(
        [
            plan.excluded_questions.select(
                "question_id", "reason", session_id=pl.lit(None, pl.Int64)
            ),
            plan.excluded_sessions.select(
                "session_id", "reason", question_id=pl.lit(None, pl.String)
            ),
        ],
        how="diagonal_relaxed",
    ).with_columns(episode_id=pl.lit(None, pl.String))
    held_out = {}
    for name, frame in pieces.items():
        removed = dict(removed_rows(frame, held).collect(engine=PLAN_ENGINE).iter_rows())
        if removed:
            held_out[name] = removed
        piece = keys.attach(without(frame, held)).collect(engine=PLAN_ENGINE)
        writers.write(name, OBJECTIVES[name], CONVERSATION_GROUP_ROWS, piece)
    for name, schema in SESSION_TABLES.items():
        piece = keys.attach(_frame(sessions.tables[name]).lazy()).collect(engine=PLAN_ENGINE)
        writers.write(name, schema, TABLE_GROUP_ROWS, piece)
    writers.write("splits", SPLIT_ASSIGNMENT, TABLE_GROUP_ROWS, splits)
    tally = SplitTally()
    tally.add(splits)
    output = SegmentOutput(SESSION_SEGMENT, redactions=dict(sessions.redactions), held_out=held_out)
    return writers.close(output.tallied(tally))


def _frame(table: pa.Table) -> pl.DataFrame:
    out = pl.from_arrow(table)
    assert isinstance(out, pl.DataFrame)
    return out
