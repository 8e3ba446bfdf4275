"""The pipeline, data flowing one way: sources → validate → normalize → derive → export.

``_build`` reads as the list of stages, each called by name, each handing the next a value.
Around them, from outside: the build's work folder, rejects file and cache (``run``), and the
segment loop that derives and exports one segment at a time (``segments``). Everything is
written into the work folder and swapped in at the very end, so a failed build (too many
rejects, a crash) leaves the previous dataset untouched.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from builder import export
from builder.config import BuildConfig
from builder.derive.sessions.replay import ReplayOptions
from builder.derive.splits.copies import later_messages
from builder.derive.splits.plan import HeldOutPlan, held_out_problems, plan_held_out
from builder.errors import DataRefused, EnvironmentProblem
from builder.export.carried import export_carried
from builder.export.segment import SegmentOutput, export_sessions
from builder.fs import storage
from builder.fs.named_file import replaced
from builder.fs.output import output_lock, swap
from builder.ingest.files import ingest_files
from builder.ingest.rejects import RejectsWriter
from builder.ingest.staging import plan_segments
from builder.pipeline.run import BuildRun
from builder.pipeline.segments import export_segments
from builder.redact import RedactionOptions
from builder.sources.inputs import expand_inputs
from schemas.stages import Rejected, StageResults
from schemas.vocabulary import CHECK_FAILED, DUPLICATE_ID

if TYPE_CHECKING:  # imported where used: a build without sessions never loads them
    from builder.derive.sessions import SessionsResult
    from builder.sessions.validate import Validated


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
        # as given (``build --from``: the restored build's), else planned
        segments=config.segments or plan_segments(episodes, config.segment_bytes),
    )


def _progress_bar(config: BuildConfig, enabled: bool) -> tqdm:
    paths = (*config.synthetic_questions, *config.llm_questions, *config.episodes)
    total = sum(storage.stat(p).st_size for p in paths)
    return tqdm(total=total, unit="B", unit_scale=True, desc="reading", disable=not enabled)


def check_reject_ratio(
    config: BuildConfig, records: int, rejected: Rejected, kept_at: Path | None = None
) -> None:
    """Refuse the build when too many of its ``records`` were rejected; ``kept_at``: where
    the refused build's rejects go (``rejects_if_refused``), the rejects file unless given.
    A bank question asked again (``duplicate_id``: the same text and hint under another
    producer id, as the capture project's template banks ask two parameter sets in one
    wording) is no broken record and does not count: it is kept once, the repeat in the
    rejects."""
    counted = rejected.total - rejected.by_kind.get(DUPLICATE_ID, 0)
    ratio = counted / records if records else 0.0
    if ratio > config.max_reject_ratio:
        checks = rejected.by_kind.get(CHECK_FAILED, 0)
        # exit 3 says that --strict made rejects of flagged records; the message says it too
        by_strict = f", {checks} of them by --strict (integrity checks failed)" if checks else ""
        raise BuildFailed(
            f"{counted} of {records} records rejected ({ratio:.2%}){by_strict}, more "
            f"than the allowed {config.max_reject_ratio:.2%} (max_reject_ratio); see "
            f"{kept_at or config.rejects}",
            strict_checks=checks > 0,
        )


def build(config: BuildConfig, progress: bool = False) -> BuildReport:
    # A link to the output folder (onto a larger disk, say) or to the rejects file stays a
    # link: what it names is what the build replaces, locks and works beside.
    config = replace(config, out=replaced(config.out), rejects=replaced(config.rejects))
    with output_lock(config.out):
        report = _build(config, progress)
        if config.upload_to:
            try:
                report.upload = storage.upload(report.out, config.upload_to)
            except storage.StorageError as exc:
                raise UploadFailed(str(exc)) from exc
        return report


def read_sessions(config: BuildConfig, rejects: RejectsWriter) -> Validated | None:
    """Sessions, a source: the configured database's rows, validated (tables in memory),
    their rejects recorded; ``derive_sessions`` makes their rows once the episodes are
    exported."""
    if not config.sessions:
        return None
    from builder.sessions.source import read

    validated = read(config.sessions)
    for reject in validated.rejects:
        rejects.add(reject)
    return validated


def derive_sessions(
    config: BuildConfig, validated: Validated, outputs: list[SegmentOutput]
) -> SessionsResult:
    """The sessions' rows, through the derive step, once their secrets are redacted: with
    the values the episode segments assigned (the sessions segment comes after them, and a
    value assigned in one input is redacted in every later one) as well as their own."""
    from builder.derive.sessions import derive_sessions
    from builder.sessions.source import redacted

    counts: Mapping[str, int] = {}
    if config.redaction_enabled:
        known = outputs[-1].secret_values if outputs else []
        validated, counts = redacted(validated, RedactionOptions.of(config), known)
    options = ReplayOptions(config.null_correct_trains, max_output_chars=config.max_output_chars)
    name = dict(config.input_names).get(config.sessions)  # a restored database's own name
    return derive_sessions(validated, options, counts, name)


def _build(config: BuildConfig, progress: bool) -> BuildReport:
    """The stages in order: sources → validate → normalize (the ingest, into staging
    tables), the sessions source, the held-out plan, then derive → export a segment at a
    time, the sessions' rows, the earlier builds' assignments this one carries, and the card
    and manifest; swapped in at the very end."""
    started = time.perf_counter()
    config = expanded(config)
    with BuildRun.start(config) as run:
        config = run.config
        with _progress_bar(config, progress) as bar:
            ingested = ingest_files(
                config, run.work / "tables", run.rejects, bar.update, cache=run.cache
            )
        validated = read_sessions(config, run.rejects)
        session_rows = sum(validated.rows_read.values()) if validated else 0
        rejected = run.rejects.summary()
        check_reject_ratio(config, ingested.records + session_rows, rejected, run.refused_at)
        plan = plan_splits(run.work, config, run.cache, validated)
        outputs = export_segments(run.work, run.staged, config, plan, run.cache, run.card_to_come)
        sessions = derive_sessions(config, validated, outputs) if validated else None
        if sessions is not None:
            outputs.append(export_sessions(run.staged, sessions, config, plan))
        known = {v for output in outputs for v in output.secret_values}
        carried = export_carried(run.staged, plan, config, known)
        if carried is not None:
            outputs.append(carried)
        results = StageResults(
            ingested, run.rejects.summary(), sessions.summary if sessions else None
        )
        images = run.card_images()
        manifest = export.export_dataset(
            run.staged, outputs, config, results, plan, run.card_memo, images
        )
        served = run.finish_cache()
        swap(run.staged, config.out, run.on_disk)
        run.finished()
    seconds = time.perf_counter() - started
    return BuildReport(manifest, seconds, config.out, served, cache_busy=run.cache_busy)


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
    options = ReplayOptions(config.null_correct_trains, max_output_chars=config.max_output_chars)
    # what the sessions config will train on, read as its replay will render it
    prompts = later_messages(validated.sessions, validated.actions, options) if validated else None
    plan = plan_held_out(work / "tables", config, sessions, reused, prompts)
    if config.strict:
        problems = held_out_problems(plan, config)
        if problems:
            raise BuildFailed("; ".join(problems) + " (--strict)", strict_checks=True)
    return plan
