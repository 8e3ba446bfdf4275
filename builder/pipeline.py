"""The pipeline, data flowing one way: sources → validate → normalize → derive → export.

Everything is written into a work folder beside the output and swapped in at the very end,
so a failed build (too many rejects, a crash) leaves the previous dataset untouched.
"""

from __future__ import annotations

import functools
import importlib
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from tqdm import tqdm

from builder import export
from builder.cache import open_cache
from builder.config import BuildConfig
from builder.derive.splits.plan import HeldOutPlan, held_out_problems, plan_held_out
from builder.errors import DataRefused, EnvironmentProblem
from builder.export.buckets import bucket_count, partition
from builder.export.card import CardImages
from builder.export.lookup import QuestionIndex, lookup
from builder.export.segment import SegmentExporter, SegmentOutput, export_sessions
from builder.fs import storage
from builder.fs.output import (
    build_manifest,
    output_lock,
    recover_interrupted_swap,
    refused_rejects,
    swap,
)
from builder.ingest.files import ingest_files
from builder.ingest.rejects import RejectsWriter
from builder.ingest.results import IngestResult
from builder.ingest.staging import plan_segments, segment_names
from builder.redact import RedactionOptions, TableRedactor
from builder.report import card_images
from builder.report.chart_process import ChartDrawer, chart_drawer
from builder.sources.inputs import expand_inputs
from schemas.vocabulary import CHECK_FAILED

# A segment's buckets follow its episodes, or its questions (the banks' segment has only those).
BUCKET_SIZED = ("episodes", "questions")
# What the card's features need at the end of a build: ``datasets``, about a second of
# imports. With a card memo, only if the schemas changed (``export.card.card_yaml``): not
# warmed. Its charts are drawn by a process of their own (``report.chart_process``).
CARD_IMPORTS = ("datasets", "huggingface_hub")


def card_images_drawn_by(drawer: ChartDrawer | None) -> CardImages:
    """The card's charts, drawn by the report's code from the folder the export wrote:
    by ``drawer``, or in this process."""
    write = functools.partial(card_images.write_card_images, drawer=drawer)
    return CardImages(write, card_images.card_section)


def warm_imports(modules: tuple[str, ...]) -> threading.Thread:
    """Import ``modules`` on a thread. Started when the configs are derived and written —
    work that runs in Polars and Arrow, outside the GIL, with this thread waiting — so the
    imports cost the build's end nothing. A failure is left for the real import to report."""

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the import where it is used says what is wrong
                return

    thread = threading.Thread(target=run, name="warm-imports", daemon=True)
    thread.start()
    return thread


class BuildFailed(DataRefused, RuntimeError):
    """The build was refused (e.g. too many rejects); the previous output is intact."""

    def __init__(self, message: str, strict_checks: bool = False) -> None:
        super().__init__(message)
        self.strict_checks = strict_checks


class UploadFailed(EnvironmentProblem, RuntimeError):
    """The build is complete locally, but copying it to ``upload_to`` failed."""


@dataclass
class BuildReport:
    manifest: dict[str, Any]
    seconds: float
    out: Path
    cache: dict[str, int] | None = None  # what the incremental cache served
    cache_busy: Path | None = None  # the cache another build held: this one ran without it
    upload: dict[str, int] | None = None  # files sent, unchanged, deleted (``upload_to``)


def expanded(config: BuildConfig) -> BuildConfig:
    """The config with its globs expanded and its episode files cut into segments, once, so
    every stage sees the same segments."""
    episodes = tuple(expand_inputs(config.episodes))
    return replace(
        config,
        episodes=episodes,
        synthetic_questions=tuple(expand_inputs(config.synthetic_questions)),
        llm_questions=tuple(expand_inputs(config.llm_questions)),
        segments=plan_segments(episodes, config.segment_bytes),
    )


def _progress_bar(config: BuildConfig, enabled: bool) -> tqdm:
    paths = (*config.synthetic_questions, *config.llm_questions, *config.episodes)
    total = sum(storage.stat(p).st_size for p in paths)
    return tqdm(total=total, unit="B", unit_scale=True, desc="reading", disable=not enabled)


def check_reject_ratio(
    config: BuildConfig,
    result: IngestResult,
    rejects: RejectsWriter,
    extra_records: int = 0,
    kept_at: Path | None = None,
) -> None:
    """Refuse the build when too many records were rejected; ``kept_at``: where the refused
    build's rejects go (``rejects_if_refused``), the rejects file unless given."""
    records, rejected = result.records + extra_records, rejects.total
    ratio = rejected / records if records else 0.0
    if ratio > config.max_reject_ratio:
        checks = rejects.by_kind.get(CHECK_FAILED, 0)
        # exit 3 says that --strict made rejects of flagged records; the message says it too
        by_strict = f", {checks} of them by --strict (integrity checks failed)" if checks else ""
        raise BuildFailed(
            f"{rejected} of {records} records rejected ({ratio:.2%}){by_strict}, more than the "
            f"allowed {config.max_reject_ratio:.2%} (max_reject_ratio); see "
            f"{kept_at or config.rejects}",
            strict_checks=checks > 0,
        )


def build(config: BuildConfig, progress: bool = False) -> BuildReport:
    with output_lock(config.out):
        report = _build(config, progress)
        if config.upload_to:
            try:
                report.upload = storage.upload(report.out, config.upload_to)
            except storage.StorageError as exc:
                raise UploadFailed(str(exc)) from exc
        return report


def read_sessions(config: BuildConfig, rejects: RejectsWriter) -> Any:
    """Sessions from the configured database, validated (tables in memory), rejects
    recorded; ``finish_sessions`` makes their rows once the episodes are exported."""
    if not config.sessions:
        return None
    from builder.sessions.pipeline import read

    validated = read(config.sessions)
    for reject in validated.rejects:
        rejects.add(reject)
    return validated


def finish_sessions(config: BuildConfig, validated: Any, outputs: list[SegmentOutput]) -> Any:
    """The sessions' tables and rows, redacted with the secret values the episode segments
    assigned (the sessions segment comes after them, and a value assigned in one input is
    redacted in every later one) as well as their own."""
    from builder.sessions.pipeline import finish
    from builder.sessions.replay import ReplayOptions

    known = outputs[-1].secret_values if outputs else []
    return finish(
        validated,
        ReplayOptions(config.null_correct_trains, max_output_chars=config.max_output_chars),
        RedactionOptions.of(config) if config.redaction_enabled else None,
        known,
    )


def rejects_if_refused(config: BuildConfig) -> Path:
    """Where a build the data refuses keeps its rejects: the rejects file, unless the output
    folder holds a build, whose rejects file that is (``episodes report`` reads the two
    together): then beside it (``preflight.refused_rejects``), so the build left in place
    stays whole."""
    if build_manifest(config.out) is None:
        return config.rejects
    return refused_rejects(config.rejects)


def _build(config: BuildConfig, progress: bool) -> BuildReport:
    started = time.perf_counter()
    config = expanded(config)
    out = config.out
    work = out.parent / f".{out.name}.work"
    recover_interrupted_swap(out)
    refused_at = rejects_if_refused(config)
    shutil.rmtree(work, ignore_errors=True)
    rejects = RejectsWriter(config.rejects)
    cache = open_cache(config) if config.cache_dir else None
    busy = config.cache_dir if cache is None else None
    if cache is None:  # none configured, or another build holds it: this one runs uncached
        config = replace(config, cache_dir=None)
    finished = False  # the build completed, or the data refused it: its rejects are kept
    kept_at = config.rejects
    charts: list[ChartDrawer] = []  # started when the card's charts are to be drawn
    try:
        with _progress_bar(config, progress) as bar:
            result, normalizer = ingest_files(
                config, work / "tables", rejects, bar.update, cache=cache
            )
        validated = read_sessions(config, rejects)
        session_rows = sum(validated.rows_read.values()) if validated else 0
        check_reject_ratio(config, result, rejects, session_rows, refused_at)
        plan = plan_splits(work, config, cache, validated)
        staged = work / "dataset"
        # A rebuild that reuses every segment reuses the card's YAML and images as well:
        # nothing to import or draw. One that exports a segment draws and writes them again.
        memo = cache.directory / "card.json" if cache is not None else None
        warming: list[threading.Thread] = []

        def card_to_come() -> None:
            if not charts:
                charts.append(chart_drawer())
                if memo is None or not memo.is_file():
                    warming.append(warm_imports(CARD_IMPORTS))

        outputs = export_segments(work, staged, config, plan, cache, card_to_come)
        sessions = finish_sessions(config, validated, outputs) if validated else None
        if sessions:
            outputs.append(export_sessions(staged, sessions, config, plan))
        for thread in warming:
            thread.join()  # the card imports these next: one thread at a time
        images = card_images_drawn_by(charts[0] if charts else None)
        manifest = export.export_dataset(
            staged, outputs, config, result, normalizer, rejects, sessions, memo, images, plan
        )
        served = None
        if cache is not None:
            cache.segments.finish()
            served = {
                "segments reused": len(cache.segments.reused),
                "segments built": len(cache.segments.pending),
                "files replayed from cached batches": cache.hits,
                "files normalized": cache.misses,
            }
        swap(staged, out)
        finished = True
    except DataRefused:
        finished, kept_at = True, refused_at
        raise
    finally:
        try:  # each is undone even when one before it fails: no work files are left
            for drawer in charts:
                drawer.close()
            rejects.close(keep=finished, to=kept_at)
        finally:
            if cache is not None:
                cache.close()
            shutil.rmtree(work, ignore_errors=True)
    return BuildReport(manifest, time.perf_counter() - started, out, served, cache_busy=busy)


def plan_splits(work: Path, config: BuildConfig, cache: Any, validated: Any) -> HeldOutPlan:
    """Every question's split and what is held out of training, before any segment is
    derived (``builder.derive.splits.plan``); ``--strict`` refuses a leaking plan here."""
    reused = []
    if cache is not None:
        reused = [
            (stored.directory / "data", list(stored.output.files))
            for stored in cache.segments.reused.values()
        ]
    sessions = validated.sessions.select("question_id", "split_text") if validated else None
    plan = plan_held_out(work / "tables", config, sessions, reused)
    if config.strict:
        problems = held_out_problems(plan, config)
        if problems:
            raise BuildFailed("; ".join(problems) + " (--strict)", strict_checks=True)
    return plan


def export_segments(
    work: Path,
    staged: Path,
    config: BuildConfig,
    plan: HeldOutPlan,
    cache: Any,
    exporting: Callable[[], None] = lambda: None,
) -> list[SegmentOutput]:
    """Every episode segment's files, in order: a stored one (``builder.cache.segments``) linked
    in, any other exported from its staging tables. Before any config is derived, secrets
    are redacted as a bucket is read, on the thread that derives it (nothing rewritten; the
    values assigned to secret names are found by a pre-pass on a thread of its own while
    the segment is cut: the cut reads a batch at a time, ``buckets.open_streaming``, so
    the two together stay below the derive's peak); a secret value assigned in one segment
    is redacted in every later one. ``exporting`` is
    called before each segment that is exported rather than linked from the cache: not
    while stored ones are linked, thousands of short system calls that a thread holding the
    GIL would slow down tenfold."""
    outputs: list[Future[SegmentOutput] | SegmentOutput] = []
    known: tuple[str, ...] = ()
    exporter = SegmentExporter(staged, config, plan)
    index = QuestionIndex(work / "questions.sqlite")
    prepass = ThreadPoolExecutor(1, thread_name_prefix="redact-prepass")
    try:
        for name in segment_names(config):
            stored = cache.segments.reused.get(name) if cache is not None else None
            if stored is not None:
                stored.link_into(staged)
                index.add_published(staged, name, stored.output.files)
                outputs.append(stored.output)
                known = tuple(stored.output.secret_values)
                continue
            exporting()
            tables = work / "tables" / name
            options = RedactionOptions.of(config)
            finding = prepass.submit(TableRedactor, tables, options, known)
            sizes = (pq.read_metadata(tables / f"{t}.parquet").num_rows for t in BUCKET_SIZED)
            rows = max(sizes)
            buckets = work / "buckets" / name
            looked_up = lookup(index, tables)
            parts = partition(tables, bucket_count(rows), buckets, looked_up)
            redactor = finding.result()
            written = exporter.export(name, parts, redactor.frame)  # questions written on return
            index.add_published(staged, name)
            counts, known = redactor.counts(), redactor.values
            written.add_done_callback(functools.partial(_finish, counts, known, buckets))
            outputs.append(written)
    finally:
        prepass.shutdown(cancel_futures=True)
        exporter.close()
        index.close()
    done = [o if isinstance(o, SegmentOutput) else o.result() for o in outputs]
    if cache is not None:
        for output in done:
            if output.name in cache.segments.pending:
                cache.segments.store(output, staged)
    return done


def _finish(
    redactions: dict[str, int], secrets: tuple[str, ...], buckets: Path, written: Future[Any]
) -> None:
    """A segment's files are written: its redaction counts join its output; its buckets
    go."""
    if written.exception() is None:
        written.result().redactions = redactions
        written.result().secret_values = list(secrets)
    shutil.rmtree(buckets, ignore_errors=True)
