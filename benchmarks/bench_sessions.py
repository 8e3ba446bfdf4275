"""Benchmark: read N actions from a real PostgreSQL server into the ``actions`` table, batch-wise.

Starts a throwaway server (``builder.sessions.pgcluster``), bulk-loads generated sessions
(``samples.sessions.generate``; ADBC ingest = binary COPY), then measures each mode in
a fresh child process, so that its peak RSS (``ru_maxrss``) belongs to that mode only:

* ``stream``: iterate the record batches and drop them: what the reader itself holds;
* ``batches``: the build's path: ``read_source`` (batch-wise) + ``validate``;
* ``whole``: the same query fetched in one go (``fetch_arrow_table``) + ``validate``.

Peak RSS is the whole child's (interpreter and libraries included); ``baseline`` is its RSS
just before the actions are read. Linux carries a parent's peak RSS into a child's
``ru_maxrss`` across fork + exec, so the parent never holds the data: loading runs in a
child too. Usage::

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builder.sessions.columns import column_types, read_schema, select_sql  # noqa: E402
from builder.sessions.db import connect, ingest, init_database  # noqa: E402
from builder.sessions.pgcluster import temporary_cluster  # noqa: E402
from builder.sessions.read import iter_batches, read_source, read_table  # noqa: E402
from builder.sessions.urls import parse_url  # noqa: E402
from builder.sessions.validate import validate  # noqa: E402
from samples.sessions import generate  # noqa: E402

MODES = ("stream", "batches", "whole")


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def load(url: str, n_actions: int, per_session: int) -> dict[str, Any]:
    """Generate the data and bulk-load it into the server's (constrained) tables."""
    start = time.perf_counter()
    n_sessions = max(1, n_actions // per_session)
    sessions, actions = generate(n_sessions, per_session, seed=1)
    generated = time.perf_counter() - start
    init_database(url)
    ingest(url, [("sessions", sessions), ("actions", actions)])
    with connect(url) as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_total_relation_size('actions')")
        size = cur.fetchone()[0]
    return {
        "sessions": n_sessions,
        "actions": actions.num_rows,
        "arrow_mb": actions.nbytes / 2**20,
        "generate_s": generated,
        "load_s": time.perf_counter() - start - generated,
        "disk_mb": size / 2**20,
    }


def measure(mode: str, url: str, batch_rows: int) -> dict[str, Any]:
    """Read (and, but for ``stream``, validate) the actions one way."""
    db = parse_url(url)
    sessions = read_table(db, "sessions")
    baseline = current_rss_mb()
    start = time.perf_counter()
    rows = batches = 0
    during = baseline
    if mode == "stream":
        with connect(db) as conn:
            for batch in iter_batches(conn, db.dialect, "actions", batch_rows):
                rows, batches = rows + batch.num_rows, batches + 1
                during = max(during, current_rss_mb())
        read_s, validate_s = time.perf_counter() - start, 0.0
    else:
        if mode == "batches":
            actions = read_source(db, batch_rows).actions
        else:
            with connect(db) as conn, conn.cursor() as cur:
                types = column_types(cur, db.dialect, "actions")
                cur.execute(select_sql(db.dialect, "actions", types))
                actions = cur.fetch_arrow_table().rename_columns(read_schema("actions").names)
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
        "peak_rss_mb": peak_rss_mb(),
        "stream_max_mb": during,  # stream only: current RSS sampled after every batch
    }


def child(*args: str) -> dict[str, Any]:
    """This script run with ``args`` in a fresh process; its last stdout line is JSON."""
    command = [sys.executable, __file__, *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(info: dict[str, Any], results: list[dict[str, Any]], batch_rows: int) -> None:
    print(
        f"{info['actions']:,} actions in {info['sessions']:,} sessions: generated in "
        f"{info['generate_s']:.1f} s ({info['arrow_mb']:.0f} MiB of Arrow), loaded into "
        f"PostgreSQL in {info['load_s']:.1f} s ({info['disk_mb']:.0f} MiB on disk with "
        f"indexes); batch_rows={batch_rows:,}\n"
    )
    header = ["mode", "rows", "batches", "read s", "validate s", "rows/s", "baseline MiB"]
    header += ["peak RSS MiB", "peak - baseline MiB"]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in results:
        total = r["read_s"] + r["validate_s"]
        cells = [r["mode"], f"{r['rows']:,}", str(r["batches"]), f"{r['read_s']:.2f}"]
        cells += [f"{r['validate_s']:.2f}", f"{r['rows'] / total:,.0f}"]
        cells += [f"{r[k]:.0f}" for k in ("baseline_mb", "peak_rss_mb")]
        cells.append(f"{r['peak_rss_mb'] - r['baseline_mb']:.0f}")
        print(" | ".join(cells))
    by_mode = {r["mode"]: r for r in results}
    ratio = by_mode["batches"]["peak_rss_mb"] / by_mode["whole"]["peak_rss_mb"]
    stream = by_mode["stream"]["stream_max_mb"] - by_mode["stream"]["baseline_mb"]
    print(
        f"\npeak RSS batches/whole = {ratio:.2f}; while streaming, RSS stayed within "
        f"{stream:.0f} MiB of its baseline"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--actions", type=int, default=1_000_000)
    parser.add_argument("--actions-per-session", type=int, default=20)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        print(json.dumps(load(args.url, args.actions, args.actions_per_session)))
        return
    if args.measure:
        print(json.dumps(measure(args.measure, args.url, args.batch_rows)))
        return
    with temporary_cluster() as cluster:
        n, per, batch = str(args.actions), str(args.actions_per_session), str(args.batch_rows)
        info = child("--load", "--url", cluster.url, "--actions", n, "--actions-per-session", per)
        results = [
            child("--measure", mode, "--url", cluster.url, "--batch-rows", batch) for mode in MODES
        ]
    report(info, results, args.batch_rows)


if __name__ == "__main__":
    main()
