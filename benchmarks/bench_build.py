"""Full-build throughput and peak memory at 1×, 2× and 4× a base size, against the JSON floor.

Each measurement runs in a fresh subprocess, so peak RSS (``ru_maxrss`` of the child) is the
build's own and not inherited from an earlier size. The floor is ``orjson.loads`` over every
line of the same file: the least any builder must do.
"""

from __future__ import annotations

import argparse
import json
import resource
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

BUILD = """
import sys
from pathlib import Path
from builder.build import build
from builder.config import BuildConfig
build(BuildConfig(episodes=(sys.argv[1],), out=Path(sys.argv[2]), rejects=Path(sys.argv[3])))
"""


def run_child(code: str, *args: str) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], check=True)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024


def generate(path: Path, episodes: int, seed: int) -> None:
    if path.exists():
        return
    from builder.synthetic import generate_episodes, write_jsonl

    write_jsonl(path, generate_episodes(episodes, seed))


def measure(work: Path, episodes: int) -> dict[str, float]:
    source = work / f"episodes-{episodes}.jsonl"
    generate(source, episodes, seed=episodes)
    mb = source.stat().st_size / 1e6
    floor_s, _ = run_child(FLOOR, str(source))
    out = work / f"out-{episodes}"
    build_s, rss = run_child(BUILD, str(source), str(out / "ds"), str(out / "rejects.jsonl"))
    return {
        "episodes": episodes,
        "mb": round(mb, 1),
        "floor_s": round(floor_s, 2),
        "build_s": round(build_s, 2),
        "episodes_per_s": round(episodes / build_s),
        "mb_per_s": round(mb / build_s, 1),
        "build_over_floor": round(build_s / floor_s, 1),
        "peak_rss_mib": round(rss),
    }


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=5000, help="episodes at 1×")
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [measure(args.work, args.base * k) for k in (1, 2, 4)]
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in header) + " |")
    print(f"RSS 4× / 1×: {rows[2]['peak_rss_mib'] / rows[0]['peak_rss_mib']:.2f}")
    (args.work / "build.json").write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
