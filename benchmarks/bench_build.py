"""Full-build throughput and peak memory at 1×, 2× and 4× a base size, against the JSON floor.

Inputs are the issue's realistic profile (``benchmarks.episodes_profile``: ≈56 KB episodes,
3–7 consistency traces, both trace forms). Each measurement runs in a fresh subprocess; peak
RSS is sampled over the whole process tree (the build and its worker processes, summed), so
a parallel build cannot hide memory in its workers. The floor is ``orjson.loads`` over every
line of the same file: the least any builder must do. The child also reports how long the
ingest stage (read, validate, normalize, staging Parquet) took, to show where time goes.

``python -m benchmarks.bench_build --base 1000 [--workers N] [--baseline-root DIR]``
(``--baseline-root``: a checkout of another version to measure with the same inputs.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

FLOOR = """
import sys, orjson
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.strip():
            orjson.loads(line)
"""

# The child of every build measurement: a BuildConfig from JSON (options an older builder
# lacks are dropped, so --baseline-root works), timing the ingest stage and the whole build.
TIMED_BUILD = """
import json, sys, time
from pathlib import Path


def main():
    import builder.build as b
    from builder.config import BuildConfig

    timing = {}
    ingest = b.ingest_files

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return ingest(*args, **kwargs)
        finally:
            timing["ingest_s"] = time.perf_counter() - started

    b.ingest_files = timed
    fields = BuildConfig.__dataclass_fields__
    given = json.loads(sys.argv[1])
    options = {k: v for k, v in given.items() if k in fields and v not in (None, "")}
    for key in ("out", "rejects", "cache_dir"):
        if key in options:
            options[key] = Path(options[key])
    options["episodes"] = tuple(options["episodes"])
    started = time.perf_counter()
    b.build(BuildConfig(**options))
    timing["build_s"] = time.perf_counter() - started
    print("TIMING " + json.dumps(timing))


if __name__ == "__main__":
    main()
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


def run_child(code: str, *args: str, root: Path | None = None) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB of the process tree, stdout) of one child process."""
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
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
    out = child.stdout.read() if child.stdout else ""
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, "child", out)
    return seconds, peak / 2**20, out


def generate(path: Path, episodes: int, seed: int) -> None:
    if path.exists():
        return
    from benchmarks.episodes_profile import profile_episodes
    from builder.synthetic import write_jsonl

    tmp = path.with_suffix(".tmp.jsonl")
    write_jsonl(tmp, profile_episodes(episodes, seed))
    tmp.rename(path)


def measure(work: Path, episodes: int, workers: int, root: Path | None) -> dict[str, float]:
    source = (work / f"profile-{episodes}.jsonl").resolve()
    generate(source, episodes, seed=episodes)
    mb = source.stat().st_size / 1e6
    floor_s, _, _ = run_child(FLOOR, str(source))
    out = (work / f"out-{episodes}").resolve()
    options = {
        "episodes": [str(source)],
        "out": str(out / "ds"),
        "rejects": str(out / "rejects.jsonl"),
        "workers": workers,
    }
    build_s, rss, stdout = run_child(TIMED_BUILD, json.dumps(options), root=root)
    timing = json.loads(stdout.rsplit("TIMING ", 1)[1]) if "TIMING " in stdout else {}
    ingest_s = timing.get("ingest_s", float("nan"))
    return {
        "episodes": episodes,
        "mb": round(mb, 1),
        "floor_s": round(floor_s, 2),
        "build_s": round(build_s, 2),
        "ingest_s": round(ingest_s, 2),
        "episodes_per_s": round(episodes / build_s),
        "mb_per_s": round(mb / build_s, 1),
        "build_over_floor": round(build_s / floor_s, 1),
        "ingest_over_floor": round(ingest_s / floor_s, 1),
        "peak_rss_mib": round(rss),
    }


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=5000, help="episodes at 1×")
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    parser.add_argument("--workers", type=int, default=0, help="0: the builder's default")
    parser.add_argument("--scales", default="1,2,4")
    parser.add_argument("--baseline-root", type=Path, default=None)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    scales = [int(k) for k in args.scales.split(",")]
    rows = [measure(args.work, args.base * k, args.workers, args.baseline_root) for k in scales]
    header = list(rows[0])
    print(f"cores: {os.cpu_count()}; workers: {args.workers or 'default'}")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in header) + " |")
    if len(rows) > 1:
        ratio = rows[-1]["peak_rss_mib"] / rows[0]["peak_rss_mib"]
        print(f"RSS {scales[-1]}× / {scales[0]}×: {ratio:.2f}")
    (args.work / "build.json").write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
