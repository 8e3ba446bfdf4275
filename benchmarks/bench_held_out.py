"""What held-out integrity costs: grouping questions into near-duplicate groups (the exact
similarity join), the leakage audit, and decontamination against an eval set, each timed
alone, then a whole build of the same questions (question banks, one episode-free bank per
run) with ``--split-by question`` (no grouping, the floor) and with the default groups plus
decontamination. Questions are templated paraphrases (``samples.paraphrases``): the dense
case, where most pairs sit just around the threshold.

``python -m benchmarks.bench_held_out [--sizes 2000 10000] [--evals 10000]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from builder.derive.decontamination.evals import EvalSet
from builder.derive.decontamination.overlap import PROMPTS, decontaminate
from builder.derive.splits import SplitConfig
from builder.derive.splits.assign import PINNED_COLUMNS, QUESTION_COLUMNS, SplitPolicy, assign
from builder.derive.splits.audit import audit
from samples.files import write_jsonl
from samples.paraphrases import paraphrase, questions

CHECKOUT = Path(__file__).resolve().parents[1]


def corpus(n: int, seed: int = 0) -> list[tuple[str, str, str]]:
    import random

    rng = random.Random(seed)
    base = questions(int(n * 0.8), seed=seed)
    extra = [(paraphrase(t, rng), d, k) for t, d, k in base[: n - len(base)]]
    return list({t: (t, d, k) for t, d, k in base + extra}.values())


def frame(items: list[tuple[str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "question_id": [f"q{i:07d}" for i in range(len(items))],
            "text": [t for t, _, _ in items],
            "weight": [1] * len(items),
            "dataset": [d for _, d, _ in items],
            "template": [k for _, _, k in items],
        },
        schema=QUESTION_COLUMNS,
    )


def timed(label: str, fn):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - started
    print(f"  {label:<34} {seconds:8.2f} s")
    return result, seconds


def stages(n: int, evals: int) -> None:
    items = corpus(n)
    data = frame(items)
    policy = SplitPolicy("near_duplicate", 0.5, SplitConfig())
    print(f"{len(items):,} questions (templated paraphrases)")
    result, _ = timed(
        "group + assign", lambda: assign(data, pl.DataFrame(schema=PINNED_COLUMNS), policy)
    )
    print(f"    groups {result.stats['groups']:,}, largest {result.stats['largest_group']:,}")
    timed("audit", lambda: audit(result, data, policy))
    eval_items = tuple(t for t, _, _ in corpus(evals, seed=99))
    prompts = data.select(kind=pl.lit("question"), key="question_id", text="text").cast(PROMPTS)
    found, _ = timed(
        f"decontaminate vs {len(eval_items):,} items",
        lambda: decontaminate(prompts, [EvalSet("eval", "eval", "question", eval_items)], 8, 0.5),
    )
    print(f"    matched items {found.summary['evals'][0]['matched_items']:,}")


def whole_build(n: int, evals: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bank = root / "bank.jsonl"
        write_jsonl(
            bank, ({"question": t, "dataset": d, "template_name": k} for t, d, k in corpus(n))
        )
        (root / "none.jsonl").write_text("")
        eval_file = root / "eval.jsonl"
        write_jsonl(eval_file, ({"question": t} for t, _, _ in corpus(evals, seed=99)))
        base = [
            sys.executable,
            "-m",
            "builder",
            "build",
            "--episodes",
            str(root / "none.jsonl"),
            "--synthetic-questions",
            str(bank),
            "--no-progress",
            "--max-reject-ratio",
            "1",
        ]
        runs = {
            "split by question (no groups)": ["--split-by", "question"],
            "near-duplicate groups + decontamination": ["--decontaminate", str(eval_file)],
        }
        # the builder of this checkout, not whichever one the environment installed: a
        # checkout of another version (``git worktree``) then measures that version
        env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
        seconds = {}
        for label, extra in runs.items():
            out = root / label.split()[0]
            started = time.perf_counter()
            subprocess.run(
                [*base, "--out", str(out / "d"), "--rejects", str(out / "r.jsonl"), *extra],
                check=True,
                capture_output=True,
                cwd=root,
                env=env,
            )
            seconds[label] = time.perf_counter() - started
            print(f"  build, {label:<40} {seconds[label]:8.2f} s")
        ratio = (
            seconds["near-duplicate groups + decontamination"]
            / seconds["split by question (no groups)"]
        )
        print(f"  held-out integrity adds {100 * (ratio - 1):.0f} % to the build")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--evals", type=int, default=10000)
    args = parser.parse_args(argv)
    for n in args.sizes:
        stages(n, args.evals)
        whole_build(n, args.evals)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mb_stages": round(peak)}))


if __name__ == "__main__":
    main(sys.argv[1:])
