"""What a user would run instead of the build, on the same file, in a child process each.

- ``datasets.load_dataset("json", data_files=...)``: loading alone (an Arrow cache in a
  fresh folder; no validation, no tables, no configs, no Parquet);
- DuckDB ``read_json`` → one zstd Parquet file (no validation, no tables, no configs).

DuckDB comes from the bench-only extra (``pip install -e '.[bench]'``, which ``make bench``
does); without it that peer is left out and says so.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

LOAD_DATASET = """
import sys, tempfile
import datasets
datasets.disable_progress_bars()
with tempfile.TemporaryDirectory() as cache:
    rows = datasets.load_dataset("json", data_files=sys.argv[1], cache_dir=cache, split="train")
    print(rows.num_rows)
"""

DUCKDB_PARQUET = """
import sys, duckdb
source, target = sys.argv[1], sys.argv[2]
duckdb.sql(
    f"COPY (SELECT * FROM read_json('{source}', format='newline_delimited'))"
    f" TO '{target}' (FORMAT parquet, COMPRESSION zstd)"
)
"""

Run = Callable[..., tuple[float, float, str, float]]


def measure_peers(run_child: Run, source: Path, work: Path) -> dict[str, float]:
    """Seconds (and CPU ÷ wall) of each peer on ``source``."""
    seconds, _, _, cpu = run_child(LOAD_DATASET, str(source))
    found = {"load_dataset_s": round(seconds, 2), "load_dataset_cpu_over_wall": cpu / seconds}
    if importlib.util.find_spec("duckdb") is None:
        print("DuckDB is not installed (pip install -e '.[bench]'): its peer is left out")
        return found
    target = work / f"{source.stem}.duckdb.parquet"
    seconds, _, _, cpu = run_child(DUCKDB_PARQUET, str(source), str(target))
    target.unlink(missing_ok=True)
    return found | {"duckdb_s": round(seconds, 2), "duckdb_cpu_over_wall": cpu / seconds}


def ratios(row: dict[str, float]) -> dict[str, float]:
    """The goals: the whole build against ``load_dataset`` alone (≤ 0.9), and against one
    thread parsing the input plus one thread writing the output (≤ 1.5)."""
    out = {
        "build_over_load_dataset": round(row["build_s"] / row["load_dataset_s"], 2),
        "build_over_parse_and_write": round(
            row["build_s"] / (row["floor_s"] + row["write_floor_s"]), 2
        ),
    }
    if "duckdb_s" in row:
        out["build_over_duckdb"] = round(row["build_s"] / row["duckdb_s"], 2)
    return out
