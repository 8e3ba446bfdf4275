"""The segment loop: every episode segment derived and exported in order, the cache around it.

A segment stored by the cache (``builder.cache.segments``) is linked in; any other is cut
into buckets from its staging tables, redacted as they are read, derived and written
(``builder.export.segment``).
"""

from __future__ import annotations

import functools
import itertools
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from builder.config import BuildConfig
from builder.derive.splits.plan import HeldOutPlan
from builder.export.buckets import BUCKETED, Bucket, add_lookup, bucket_count, partition
from builder.export.lookup import QuestionIndex, lookup
from builder.export.segment import SegmentExporter, SegmentOutput
from builder.ingest.staging import segment_names
from builder.redact import RedactionOptions, TableRedactor

# A segment's buckets follow its episodes, or its questions (the banks' segment has only those).
BUCKET_SIZED = ("episodes", "questions")


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
    the segment's lookup is cut: the cut reads a batch at a time,
    ``buckets.open_streaming``); a secret value assigned in one segment is redacted in every
    later one. A segment's staging tables are cut into buckets on a thread of their own
    while the segment before it is derived and written (the cut needs nothing of earlier
    segments; the questions they published are looked up and cut in after). ``exporting`` is
    called before each segment that is exported rather than linked from the cache: not
    while stored ones are linked, thousands of short system calls that a thread holding the
    GIL would slow down tenfold."""
    outputs: list[Future[SegmentOutput] | SegmentOutput] = []
    known: tuple[str, ...] = ()
    exporter = SegmentExporter(staged, config, plan)
    index = QuestionIndex(work / "questions.sqlite")
    prepass = ThreadPoolExecutor(1, thread_name_prefix="redact-prepass")
    cutting = ThreadPoolExecutor(1, thread_name_prefix="segment-cut")
    reused = cache.segments.reused if cache is not None else {}
    exported = [name for name in segment_names(config) if name not in reused]
    following = dict(itertools.pairwise(exported))  # the next one exported
    ahead: Future[list[Bucket]] | None = None
    try:
        for name in segment_names(config):
            stored = reused.get(name)
            if stored is not None:
                cache.segments.link(stored, staged)
                index.add_published(staged, name, stored.output.files)
                outputs.append(stored.output)
                known = tuple(stored.output.secret_values)
                continue
            exporting()
            tables = work / "tables" / name
            options = RedactionOptions.of(config)
            finding = prepass.submit(TableRedactor, tables, options, known)
            cut = ahead if ahead is not None else cutting.submit(_cut_segment, work, name)
            # The next segment is cut while this one is derived (a cut needs nothing of the
            # segments before it); its lookup must wait for this one's questions.
            after = following.get(name)
            ahead = cutting.submit(_cut_segment, work, after) if after else None
            parts, buckets = cut.result(), work / "buckets" / name
            add_lookup(parts, buckets, lookup(index, tables))
            redactor = finding.result()
            # Read for the last time: cut, looked up and searched for secrets. Staged
            # uncompressed, they would otherwise sit beside the buckets and the dataset.
            shutil.rmtree(tables, ignore_errors=True)
            written = exporter.export(name, parts, redactor.frame)  # questions written on return
            index.add_published(staged, name)
            counts, known = redactor.counts(), redactor.values
            written.add_done_callback(functools.partial(_finish, counts, known, buckets))
            outputs.append(written)
    finally:
        prepass.shutdown(cancel_futures=True)
        cutting.shutdown(cancel_futures=True)
        exporter.close()
        index.close()
    done = [o if isinstance(o, SegmentOutput) else o.result() for o in outputs]
    if cache is not None:
        for output in done:
            if output.name in cache.segments.pending:
                cache.segments.store(output, staged)
    return done


def _cut_segment(work: Path, name: str) -> list[Bucket]:
    """Segment ``name``'s staging tables cut into as many buckets as their rows need."""
    tables = work / "tables" / name
    return partition(tables, bucket_count(*_staged(tables)), work / "buckets" / name)


def _staged(tables: Path) -> tuple[int, int]:
    """A segment's episodes (or questions, in the banks' segment) and the bytes of its staged
    rows, uncompressed, from the staging files' metadata."""
    meta = {t: pq.read_metadata(tables / f"{t}.parquet") for t in BUCKETED}
    rows = max(meta[t].num_rows for t in BUCKET_SIZED)
    staged = sum(
        m.row_group(i).total_byte_size for m in meta.values() for i in range(m.num_row_groups)
    )
    return rows, staged


def _finish(
    redactions: dict[str, int], secrets: tuple[str, ...], buckets: Path, written: Future[Any]
) -> None:
    """A segment's files are written: its redaction counts join its output; its buckets
    go."""
    if written.exception() is None:
        written.result().redactions = redactions
        written.result().secret_values = list(secrets)
    shutil.rmtree(buckets, ignore_errors=True)
