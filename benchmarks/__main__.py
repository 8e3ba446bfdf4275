"""``make bench``: every benchmark in turn (``python -m benchmarks [build|sessions]``)."""

from __future__ import annotations

import sys

from benchmarks import bench_build


def main() -> None:
    which = sys.argv[1:] or ["build", "sessions"]
    if "build" in which:
        print("## build (episodes → dataset folder)")
        bench_build.main([])
    if "sessions" in which:
        from benchmarks import bench_sessions

        print("\n## sessions (PostgreSQL → actions table)")
        bench_sessions.main([])


if __name__ == "__main__":
    main()
