"""``make bench``: every benchmark in turn
(``python -m benchmarks [build|incremental|sessions|held_out]``)."""

from __future__ import annotations

import sys

from benchmarks import bench_build


def main() -> None:
    which = sys.argv[1:] or ["build", "incremental", "sessions", "held_out"]
    if "build" in which:
        print("## build (episodes → dataset folder)")
        bench_build.main([])
    if "incremental" in which:
        from benchmarks import bench_incremental

        print("\n## incremental (5,000 episodes in 50 files, then one more file of 1 %)")
        bench_incremental.main(["--base", "5000", "--files", "50"])
    if "sessions" in which:
        from benchmarks import bench_sessions

        print("\n## sessions (PostgreSQL → actions table)")
        bench_sessions.main([])
    if "held_out" in which:
        from benchmarks import bench_held_out

        print("\n## held-out integrity (near-duplicate groups, audit, decontamination)")
        bench_held_out.main([])


if __name__ == "__main__":
    main()
