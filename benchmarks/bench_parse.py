"""Bytes to columns: candidate engines side by side on the build benchmark's file.

Each candidate runs in a fresh process (so one's memory and threads do not slow the next),
in one sitting, against the one-thread ``orjson.loads`` floor measured first and last (the
lower taken). What each does:

* ``orjson`` (floor): ``orjson.loads`` of every line, one thread, nothing kept.
* ``msgspec typed`` (today's parse): ``builder.validate.fastpath.decode`` of every line into the
typed
  Structs generated from the pydantic models, one thread (``None`` where it declines).
* ``today's validate + normalize``: ``builder.ingest.files.normalize_batch`` over 1,000-line
  batches, one thread: typed decode, pydantic for declined lines, rows, Arrow tables.
* ``pyarrow read_json``: ``pyarrow.json.read_json``, inferred schema, multi-threaded.
* ``polars read_ndjson`` / ``scan_ndjson``: inferred, or an explicit schema (DuckDB's
  inference over the first 200 lines, the any-typed fields as String; that inference is
  inside the timed child), multi-threaded.
* ``duckdb read_json``: ``read_json(format='newline_delimited')`` to an Arrow table,
  inferred schema, multi-threaded (DuckDB is not a dependency of the builder: the
  candidate is skipped unless it is installed).

``python -m benchmarks.bench_parse [--episodes 5000] [--work .bench]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from pathlib import Path

from benchmarks.bench_build import FLOOR, generate, run_child

CANDIDATES = {
    "msgspec typed (builder.validate.fastpath, today's parse)": """
import sys
from builder.validate import fastpath
from schemas.episode import Episode
with open(sys.argv[1], "rb") as f:
    declined = sum(fastpath.decode(Episode, line.rstrip(b"\\n")) is None for line in f)
print("declined", declined)
""",
    "today's validate + normalize (builder.ingest.files.normalize_batch)": """
import sys
from builder.ingest.files import normalize_batch
from builder.sources.inputs import SourceLine
path, batch = sys.argv[1], []
with open(path, "rb") as f:
    for number, line in enumerate(f, 1):
        batch.append(SourceLine(path, number, line.rstrip(b"\\n")))
        if len(batch) == 1000:
            normalize_batch(batch, 4096)
            batch = []
if batch:
    normalize_batch(batch, 4096)
""",
    "pyarrow read_json": """
import sys, pyarrow.json
print(pyarrow.json.read_json(sys.argv[1]).num_rows)
""",
    "polars read_ndjson, inferred schema": """
import sys, polars as pl
print(pl.read_ndjson(sys.argv[1], infer_schema_length=None).height)
""",
    "polars read_ndjson, explicit schema": """
import sys
import duckdb, polars as pl
head = "SELECT * FROM read_json(?, format='newline_delimited', maximum_object_size=1073741824)"
sample = duckdb.sql(head, params=[sys.argv[2]]).to_arrow_table().slice(0, 0)
schema = pl.from_arrow(sample).schema
print(pl.read_ndjson(sys.argv[1], schema=schema).height)
""",
    "polars scan_ndjson + collect, explicit schema": """
import sys
import duckdb, polars as pl
head = "SELECT * FROM read_json(?, format='newline_delimited', maximum_object_size=1073741824)"
sample = duckdb.sql(head, params=[sys.argv[2]]).to_arrow_table().slice(0, 0)
schema = pl.from_arrow(sample).schema
print(pl.scan_ndjson(sys.argv[1], schema=schema).collect().height)
""",
    "duckdb read_json": """
import sys, duckdb
sql = "SELECT * FROM read_json(?, format='newline_delimited', maximum_object_size=1073741824)"
print(duckdb.sql(sql, params=[sys.argv[1]]).to_arrow_table().num_rows)
""",
}


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    source = (args.work / f"profile-{args.episodes}.jsonl").resolve()
    generate(source, args.episodes, seed=args.episodes)
    head = args.work / "profile-head-200.jsonl"
    with source.open("rb") as f:
        head.write_bytes(b"".join(line for _, line in zip(range(200), f, strict=False)))
    first, _, _, _ = run_child(FLOOR, str(source))
    rows: list[dict[str, object]] = []
    for name, code in CANDIDATES.items():
        if "duckdb" in code and importlib.util.find_spec("duckdb") is None:
            rows.append({"candidate": name, "s": "not installed"})
            continue
        try:
            seconds, rss, _, cpu = run_child(code, str(source), str(head))
        except Exception as exc:  # a candidate that cannot read the file is a finding too
            rows.append({"candidate": name, "s": f"failed ({type(exc).__name__})"})
            continue
        rows.append({"candidate": name, "s": round(seconds, 2), "cpu_over_wall": cpu / seconds})
        rows[-1].update(peak_rss_mib=round(rss))
    floor_s = min(first, run_child(FLOOR, str(source))[0])
    mb = source.stat().st_size / 1e6
    print(f"{args.episodes} episodes, {mb:.1f} MB; cores: {len(os.sched_getaffinity(0))}")
    print(f"floor (orjson.loads per line, one thread): {floor_s:.2f} s\n")
    print("| candidate | s | ÷ floor | CPU ÷ wall | peak RSS MiB |\n|---|---|---|---|---|")
    for row in rows:
        s = row["s"]
        if isinstance(s, float):
            ratio, cpu = s / floor_s, row["cpu_over_wall"]
            print(f"| {row['candidate']} | {s} | {ratio:.1f} | {cpu:.2f} | {row['peak_rss_mib']} |")
        else:
            print(f"| {row['candidate']} | {s} | | | |")
    (args.work / "parse.json").write_text(json.dumps({"floor_s": floor_s, "rows": rows}, indent=2))
    return rows


if __name__ == "__main__":
    main()
