"""Before and after, alternating: the same build by two checkouts of the builder, run in
turn (before, after, before, after, ...) on one file, so a busy or drifting machine slows
both alike. Wall time and the CPU time of the whole process tree are printed per run; CPU
seconds are the steadier figure on a shared machine.

``python -m benchmarks.bench_alternate --before DIR [--after DIR] [--base 5000] [--rounds 2]``
(``DIR``: a checkout of the project, e.g. ``git worktree add /tmp/before main``; ``--after``
defaults to this one). The two builds' outputs are compared file by file, so a speed-up
that changed a byte is reported as such.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import statistics
from pathlib import Path

from benchmarks.bench_build import TIMED_BUILD, build_options, generate, run_child


def differing(left: Path, right: Path) -> list[str]:
    """Files (relative paths) present in only one of two folders or with other bytes."""
    names = {p.relative_to(left) for p in left.rglob("*") if p.is_file()}
    names |= {p.relative_to(right) for p in right.rglob("*") if p.is_file()}
    return sorted(
        str(n)
        for n in names
        if not ((left / n).is_file() and (right / n).is_file())
        or not filecmp.cmp(left / n, right / n, shallow=False)
    )


def main(argv: list[str] | None = None) -> dict[str, list[dict[str, float]]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout to compare")
    parser.add_argument("--after", type=Path, default=Path.cwd())
    parser.add_argument("--base", type=int, default=5000, help="episodes")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    source = (args.work / f"profile-{args.base}.jsonl").resolve()
    generate(source, args.base, seed=args.base)
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    print("| run | which | wall s | CPU s | CPU ÷ wall | peak RSS MiB |\n|---|---|---|---|---|---|")
    for round_ in range(args.rounds):
        for which in ("before", "after"):
            root = getattr(args, which).resolve()
            out = (args.work / f"alternate-{which}").resolve()
            shutil.rmtree(out, ignore_errors=True)  # a clean build: no earlier one's splits
            options = build_options(source, out, 0)
            seconds, rss, _, cpu = run_child(TIMED_BUILD, options, root=root)
            runs[which].append({"wall_s": seconds, "cpu_s": cpu, "peak_rss_mib": rss})
            print(
                f"| {round_ + 1} | {which} | {seconds:.2f} | {cpu:.2f} | {cpu / seconds:.2f}"
                f" | {rss:.0f} |"
            )
    for key in ("wall_s", "cpu_s"):
        before = statistics.median(r[key] for r in runs["before"])
        after = statistics.median(r[key] for r in runs["after"])
        ratio = after / before
        print(f"median {key}: before {before:.2f}, after {after:.2f}, after ÷ before {ratio:.2f}")
    changed = differing(args.work / "alternate-before", args.work / "alternate-after")
    said = f"{len(changed)} files differ: {changed[:5]}" if changed else "identical"
    print(f"outputs: {said}")
    (args.work / "alternate.json").write_text(json.dumps(runs | {"differing": changed}, indent=2))
    return runs


if __name__ == "__main__":
    main()
