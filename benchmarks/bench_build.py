"""Full-build throughput and peak memory at 1×, 2× and 4× a base size, against the JSON floor.

Inputs are the issue's realistic profile (``benchmarks.episodes_profile``: ≈56 KB episodes,
3–7 consistency traces, both trace forms). Each measurement runs in a fresh subprocess; peak
RSS is sampled over the whole process tree (the build and its worker processes, summed), so
a parallel build cannot hide memory in its workers. The floor is ``orjson.loads`` over every
line of the same file (measured before and after each build; the lower is taken): the least
any builder must do. CPU time ÷ wall of the process tree shows the cores used. The write
floor is the build's own output, already in memory, written again with the project's Parquet
settings on one thread: what the export cannot spend less than on one core. Beside them, in
the same run, the tools a user would run instead (``benchmarks.peers``): the build ÷
``datasets.load_dataset("json")`` and ÷ (parse floor + write floor) are the goals.

``python -m benchmarks.bench_build --base 1000 [--workers N] [--baseline-root DIR]``
(``--no-stages``: skip the extra instrumented build that gives the stage breakdown.)
(``--baseline-root``: a checkout of another version to measure with the same inputs.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.peers import measure_peers, ratios

FLOOR = """
import sys, orjson
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.strip():
            orjson.loads(line)
"""

# The child of every build measurement: a BuildConfig from JSON (options an older builder
# lacks are dropped, so --baseline-root works), timing the whole build and, with
# ``"stages": true``, the thread-seconds spent in each stage (wrappers around the stage
# functions; stages on other threads overlap, so shares can sum past 100 %) and each
# config's plan collected alone (an extra pass after the build's own).
TIMED_BUILD = """
import json, sys, threading, time
from pathlib import Path

timing, cpu, lock = {}, {}, threading.Lock()


def wrap(owner, attr, stage):
    inner = getattr(owner, attr, None)
    if inner is None:  # an older builder without this function
        return

    def timed(*args, **kwargs):
        started, own = time.perf_counter(), time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            with lock:
                timing[stage] = timing.get(stage, 0.0) + time.perf_counter() - started
                cpu[stage] = cpu.get(stage, 0.0) + time.thread_time() - own

    setattr(owner, attr, timed)


def per_config(frames, kwargs):
    from builder.derive import OBJECTIVE_MODULES, RESHAPED

    # The plans collected together: every objective but those reshaped from another's rows.
    derived = [name for name in OBJECTIVE_MODULES if name not in RESHAPED]
    for name, frame in zip(derived, frames):
        started = time.perf_counter()
        frame.collect(**kwargs)  # on the engine the build's collect_all used
        timing["derive " + name] = timing.get("derive " + name, 0.0) + time.perf_counter() - started


def instrument():
    import polars as pl
    from builder import redact

    try:
        import builder.pipeline as b
        import builder.ingest.files as i
        from builder.validate import fastpath, validator as validate
    except ImportError:  # an older builder, before the folders by stage
        import builder.build as b
        import builder.ingest as i
        from builder import fastpath, validate
    from builder.export import writer

    wrap(fastpath, "decode", "parse (typed decode)")
    wrap(validate.Validator, "validate", "validate (pydantic fallback)")
    per_batch = sys.modules.get("builder.ingest.batch", i)  # the per-batch work, if its own
    wrap(per_batch, "emit_episode", "normalize (rows)")
    wrap(per_batch, "to_table", "normalize (Arrow tables)")
    wrap(redact.TableRedactor, "__init__", "redact (pre-pass)")
    wrap(redact.TableRedactor, "frame", "redact (buckets)")
    loop = sys.modules.get("builder.pipeline.segments", b)  # the segment loop, if its own module
    wrap(loop, "partition", "partition into buckets")
    wrap(pl, "collect_all", "derive (collect_all, every config)")
    wrap(writer.ConfigWriter, "write", "write Parquet")
    wrap(writer.ConfigWriter, "close", "write Parquet")
    wrap(b.export, "export_dataset", "card, manifest, digests")
    timed = pl.collect_all

    def collect_all_and_each(frames, *args, **kwargs):
        out = timed(frames, *args, **kwargs)
        if len(frames) > 1:
            per_config(frames, {k: v for k, v in kwargs.items() if k == "engine"})
        return out

    pl.collect_all = collect_all_and_each


def main():
    try:  # what `episodes` does first, before anything imports numpy (an older builder: nothing)
        from builder.engine.blas import one_blas_thread
    except ImportError:
        one_blas_thread = lambda: None
    one_blas_thread()
    try:  # ... and before anything imports pyarrow (an older builder: nothing)
        from builder.engine.arrow_memory import jemalloc_for_arrow
    except ImportError:
        jemalloc_for_arrow = lambda: None
    jemalloc_for_arrow()
    from builder.config import BuildConfig

    fields = BuildConfig.__dataclass_fields__
    given = json.loads(sys.argv[1])
    stages = given.pop("stages", False)
    options = {k: v for k, v in given.items() if k in fields and v not in (None, "")}
    for key in ("out", "rejects", "cache_dir"):
        if key in options:
            options[key] = Path(options[key])
    options["episodes"] = tuple(options["episodes"])
    config = BuildConfig(**options)
    try:
        import builder.cli.episodes as command
    except ImportError:  # an older builder: the command is builder.cli
        import builder.cli as command

    # What `episodes build` does before importing the build (an older builder: nothing).
    getattr(command, "start_ingest_workers", lambda config: None)(config)
    try:
        import builder.pipeline as b
    except ImportError:  # an older builder
        import builder.build as b

    try:  # what the command does next (an older builder: less, or nothing)
        from builder.engine import build_process
    except ImportError:
        try:
            from builder.engine.no_pandas import arrow_without_pandas as build_process
        except ImportError:
            build_process = lambda: None
    build_process()
    wrap(b, "ingest_files", "ingest_s")  # read, validate, normalize, staging Parquet
    if stages:
        instrument()
    started = time.perf_counter()
    b.build(config)
    timing["build_s"] = time.perf_counter() - started
    print("TIMING " + json.dumps({**timing, "cpu": cpu}))


if __name__ == "__main__":
    main()
"""

# The least the export must spend: the build's own output (every Parquet file it wrote),
# already in memory as Arrow, written again with the project's settings (zstd, statistics,
# page index, content-defined chunking) on one thread; only the writes are timed.
WRITE_FLOOR = """
import sys, time
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
try:
    from builder.fs.parquet import WRITE_OPTIONS
except ImportError:  # an older builder
    from builder.parquet import WRITE_OPTIONS
files = sorted(Path(sys.argv[1]).rglob("*.parquet"))
tables = [(pq.read_table(f), pq.ParquetFile(f).metadata) for f in files]
started = time.perf_counter()
for table, meta in tables:
    group = meta.row_group(0).num_rows if meta.num_row_groups else 1
    pq.write_table(table, pa.BufferOutputStream(), row_group_size=max(1, group), **WRITE_OPTIONS)
print(time.perf_counter() - started)
"""


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (Linux /proc)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_child(code: str, *args: str, root: Path | None = None) -> tuple[float, float, str, float]:
    """(seconds, peak RSS MiB of the process tree, stdout, CPU seconds of the process tree)
    of one child process (CPU time: of every descendant reaped, via ``RUSAGE_CHILDREN``)."""
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root or None,
    )
    peak = 0
    while child.poll() is None:
        peak = max(peak, _tree_rss(child.pid))
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = child.stdout.read() if child.stdout else ""
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, "child", out)
    return seconds, peak / 2**20, out, cpu


def generate(path: Path, episodes: int, seed: int) -> None:
    if path.exists():
        return
    from benchmarks.episodes_profile import profile_episodes
    from samples.files import write_jsonl

    tmp = path.with_suffix(".tmp.jsonl")
    write_jsonl(tmp, profile_episodes(episodes, seed))
    tmp.rename(path)


def floor(source: Path) -> float:
    return run_child(FLOOR, str(source))[0]


def build_options(source: Path, out: Path, workers: int, **extra: object) -> str:
    """The child build's options, as JSON."""
    options = {
        "episodes": [str(source)],
        "out": str(out / "ds"),
        "rejects": str(out / "rejects.jsonl"),
        "workers": workers,
    }
    return json.dumps(options | extra)


def measure(work: Path, episodes: int, workers: int, root: Path | None) -> dict[str, float]:
    source = (work / f"profile-{episodes}.jsonl").resolve()
    generate(source, episodes, seed=episodes)
    mb = source.stat().st_size / 1e6
    before = floor(source)
    out = (work / f"out-{episodes}").resolve()
    shutil.rmtree(out, ignore_errors=True)  # a clean build: no earlier one's splits
    options = build_options(source, out, workers)
    build_s, rss, stdout, cpu = run_child(TIMED_BUILD, options, root=root)
    ingest_s = json.loads(stdout.rsplit("TIMING ", 1)[1]).get("ingest_s", float("nan"))
    floor_s = min(before, floor(source))  # the floor before and after; the lower
    write_s = float(run_child(WRITE_FLOOR, str(out / "ds"), root=root)[2].strip())
    peers = measure_peers(run_child, source, work.resolve())
    row = {
        "episodes": episodes,
        "mb": round(mb, 1),
        "floor_s": round(floor_s, 2),
        "build_s": round(build_s, 2),
        "episodes_per_s": round(episodes / build_s),
        "mb_per_s": round(mb / build_s, 1),
        "ingest_s": round(ingest_s, 2),
        "build_over_floor": round(build_s / floor_s, 1),
        "ingest_over_floor": round(ingest_s / floor_s, 1),
        "write_floor_s": round(write_s, 2),  # writing the output alone, one thread
        "write_over_floor": round(write_s / floor_s, 1),
        "cpu_s": round(cpu, 1),  # the process tree's: steadier than wall on a busy machine
        "cpu_over_wall": round(cpu / build_s, 2),
        "peak_rss_mib": round(rss),
        "load_dataset_s": peers["load_dataset_s"],
        **({"duckdb_s": peers["duckdb_s"]} if "duckdb_s" in peers else {}),
    }
    return row | ratios(row)


def stages(work: Path, episodes: int, workers: int, root: Path | None) -> dict[str, float]:
    """One more build of the 1× file with every stage timed (slower: per-config plans are
    collected a second time, alone); thread-seconds per stage ÷ that build's wall time.
    Its ingest runs in this process (``workers`` 1 unless given), where the parse and
    normalize steps can be timed: a pool's workers are other processes."""
    source = (work / f"profile-{episodes}.jsonl").resolve()
    out = (work / f"out-{episodes}-stages").resolve()
    shutil.rmtree(out, ignore_errors=True)
    options = build_options(source, out, workers or 1, stages=True)
    _, _, stdout, _ = run_child(TIMED_BUILD, options, root=root)
    timing = json.loads(stdout.rsplit("TIMING ", 1)[1])
    own = timing.pop("cpu", {})
    own["ingest (all)"] = own.pop("ingest_s", float("nan"))
    wall = timing.pop("build_s")
    each = {k: v for k, v in timing.items() if k.startswith("derive ") and "(" not in k}
    timing = {k: v for k, v in timing.items() if k not in each}
    timing["ingest (all)"] = timing.pop("ingest_s", 0.0)
    inside = ("parse (typed decode)", "validate (pydantic fallback)", "normalize (rows)")
    inside += ("normalize (Arrow tables)",)
    rest = timing["ingest (all)"] - sum(timing.get(k, 0.0) for k in inside)
    timing["ingest: read lines, checks, staging"] = rest
    print(
        f"\nstages at {episodes} episodes, ingest in-process (thread-seconds ÷ wall"
        f" {wall:.2f} s of this run; CPU s: the CPU time of the threads that called the"
        " stage, which leaves out Polars' and Arrow's own thread pools, and counts none of"
        " the time a thread waited for a core):"
    )
    print("| stage | s | share of wall | CPU s |\n|---|---|---|---|")
    for name, seconds in timing.items():
        used = f"{own[name]:.2f}" if name in own else ""
        print(f"| {name} | {seconds:.2f} | {seconds / wall:.0%} | {used} |")
    total = sum(each.values()) or 1.0
    print("\nderive per config (each plan collected alone, share of their sum):")
    print("| config | s | share |\n|---|---|---|")
    for name, seconds in each.items():
        print(f"| {name} | {seconds:.2f} | {seconds / total:.0%} |")
    return {"wall_s": wall, **timing, **each, **{f"{k} CPU": v for k, v in own.items()}}


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=5000, help="episodes at 1×")
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    parser.add_argument("--workers", type=int, default=0, help="0: the builder's default")
    parser.add_argument("--scales", default="1,2,4")
    parser.add_argument("--baseline-root", type=Path, default=None)
    parser.add_argument("--no-stages", action="store_true", help="skip the stage breakdown")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    scales = [int(k) for k in args.scales.split(",")]
    rows = [measure(args.work, args.base * k, args.workers, args.baseline_root) for k in scales]
    header = list(rows[0])
    cores = len(os.sched_getaffinity(0))
    print(f"cores available: {cores}; workers: {args.workers or 'default'}")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in header) + " |")
    if len(rows) > 1:
        ratio = rows[-1]["peak_rss_mib"] / rows[0]["peak_rss_mib"]
        times = rows[-1]["build_s"] / rows[0]["build_s"]
        print(f"RSS {scales[-1]}× / {scales[0]}×: {ratio:.2f}; time: {times:.2f}")
    breakdown = (
        {}
        if args.no_stages
        else stages(args.work, rows[0]["episodes"], args.workers, args.baseline_root)
    )
    (args.work / "build.json").write_text(json.dumps({"runs": rows, "stages": breakdown}, indent=2))
    return rows


if __name__ == "__main__":
    main()
