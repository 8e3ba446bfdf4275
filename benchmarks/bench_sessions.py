"""Benchmark: read N actions from a real PostgreSQL server into the ``actions`` table, batch-wise.

Starts a throwaway server (``builder.sessions.pgcluster``), bulk-loads generated sessions
(``builder.sessions.sample.generate``; ADBC ingest = binary COPY), then measures, each in a
fresh child process so that peak RSS (``ru_maxrss``) belongs to one mode only:

* ``stream``: iterate the record batches and drop them. What the reader itself holds.
* ``batches``: the build's path: ``read_source`` (batch-wise) + ``validate``.
* ``whole``: the same query fetched in one go (``fetch_arrow_table``) + ``validate``.

Peak RSS is for the whole child process (interpreter and libraries included; ``baseline``
is the RSS just before reading); ``arrow peak`` is the Arrow memory pool's high-water mark
(Polars allocates outside it). Usage::

    PYTHONPATH=. python benchmarks/bench_sessions.py [--actions 1000000] [--batch-rows 65536]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builder.sessions.db import connect, ingest, init_database, parse_url  # noqa: E402
from builder.sessions.pgcluster import temporary_cluster  # noqa: E402
from builder.sessions.read import (  # noqa: E402
    batch_schema,
    column_types,
    iter_batches,
    read_source,
    read_table,
    select_sql,
)
from builder.sessions.sample import generate  # noqa: E402
from builder.sessions.validate import validate  # noqa: E402

MODES = ("stream", "batches", "whole")


def rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def measure(mode: str, url: str, batch_rows: int) -> dict[str, Any]:
    """One mode, in this (child) process."""
    db = parse_url(url)
    sessions = read_table(db, "sessions")
    baseline = current_rss_mb()
    pool = pa.default_memory_pool()
    start = time.perf_counter()
    rows = batches = 0
    if mode == "stream":
        with connect(db) as conn:
            for batch in iter_batches(conn, db.dialect, "actions", batch_rows):
                rows, batches = rows + batch.num_rows, batches + 1
        read_s, validate_s = time.perf_counter() - start, 0.0
    else:
        if mode == "batches":
            actions = read_source(db, batch_rows).actions
        else:
            with connect(db) as conn, conn.cursor() as cur:
                cur.execute(select_sql(db.dialect, "actions", column_types(cur, db.dialect, "actions")))
                actions = cur.fetch_arrow_table().rename_columns(batch_schema("actions").names)
        read_s = time.perf_counter() - start
        rows, batches = actions.num_rows, actions.column(0).num_chunks
        validated = validate(sessions, actions, db.redacted)
        validate_s = time.perf_counter() - start - read_s
        assert not validated.rejects and validated.actions.height == rows
    return {
        "mode": mode,
        "rows": rows,
        "batches": batches,
        "read_s": read_s,
        "validate_s": validate_s,
        "baseline_mb": baseline,
        "peak_rss_mb": rss_mb(),
        "arrow_peak_mb": pool.max_memory() / 2**20,
    }


def child(mode: str, url: str, batch_rows: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", mode, "--url", url]
    done = subprocess.run(
        [*command, "--batch-rows", str(batch_rows)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--actions", type=int, default=1_000_000)
    parser.add_argument("--actions-per-session", type=int, default=20)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--measure", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.url, args.batch_rows)))
        return

    n_sessions = max(1, args.actions // args.actions_per_session)
    with temporary_cluster() as cluster:
        url = cluster.url
        start = time.perf_counter()
        sessions, actions = generate(n_sessions, args.actions_per_session, seed=1)
        generated = time.perf_counter() - start
        init_database(url)
        ingest(url, "sessions", sessions)
        ingest(url, "actions", actions)
        loaded = time.perf_counter() - start - generated
        with connect(url) as conn, conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE actions") if False else None
            cur.execute("SELECT pg_total_relation_size('actions')")
            size_mb = cur.fetchone()[0] / 2**20
        print(
            f"{actions.num_rows:,} actions in {n_sessions:,} sessions: generated in "
            f"{generated:.1f} s ({actions.nbytes / 2**20:.0f} MiB of Arrow), loaded into "
            f"PostgreSQL in {loaded:.1f} s ({size_mb:.0f} MiB on disk incl. indexes); "
            f"batch_rows={args.batch_rows:,}\n"
        )
        results = [child(mode, url, args.batch_rows) for mode in MODES]

    header = ("mode", "rows", "batches", "read s", "validate s", "rows/s", "baseline MiB",
              "peak RSS MiB", "arrow peak MiB")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in results:
        total = r["read_s"] + r["validate_s"]
        print(
            f"{r['mode']} | {r['rows']:,} | {r['batches']} | {r['read_s']:.2f} | "
            f"{r['validate_s']:.2f} | {r['rows'] / total:,.0f} | {r['baseline_mb']:.0f} | "
            f"{r['peak_rss_mb']:.0f} | {r['arrow_peak_mb']:.0f}"
        )
    by_mode = {r["mode"]: r for r in results}
    ratio = by_mode["batches"]["peak_rss_mb"] / by_mode["whole"]["peak_rss_mb"]
    stream = by_mode["stream"]["peak_rss_mb"] - by_mode["stream"]["baseline_mb"]
    print(
        f"\npeak RSS batches/whole = {ratio:.2f}; the stream alone grows RSS by {stream:.0f} MiB "
        f"over its baseline (one batch in flight)"
    )


if __name__ == "__main__":
    main()
