"""Incremental rebuild: full build vs. a rebuild after adding one file of 1 % more episodes.

``python -m benchmarks.bench_incremental --base 1000 --files 10``: ``base`` realistic
episodes (``benchmarks.episodes_profile``) in ``files`` files, then one more file of
``base / 100`` episodes. In one run, each build in a fresh subprocess: a clean build of the
base files without cache, the same with a cold cache (the cost of writing it), the rebuild
with the new file using the warm cache, a clean build of all files without cache (the
reference the rebuild is compared with; its dataset folder must be byte-identical), and a
clean build of the same episodes from one file (what the segments cost).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import time
from pathlib import Path

from benchmarks.bench_build import TIMED_BUILD, run_child


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def same_content(a: Path, b: Path) -> bool:
    """Every file byte-equal, or (Parquet) equal by schema and values; the manifest equal
    but for the data files' digests. Export writes the same values with different page
    layouts from run to run at this size (see the report), which bytes alone would hide."""
    import pyarrow.parquet as pq

    names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    if names != sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file()):
        return False
    for name in names:
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        if x == y:
            continue
        if name.endswith(".parquet"):
            if not pq.read_table(a / name).equals(pq.read_table(b / name), check_metadata=True):
                return False
        elif name == "manifest.json":
            mx, my = json.loads(x), json.loads(y)
            if _without_file_digests(mx) != _without_file_digests(my):
                return False
        else:
            return False
    return True


def _without_file_digests(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_file_digests(v) for k, v in value.items() if not k.endswith(".parquet")}
    if isinstance(value, list):
        return [_without_file_digests(v) for v in value]
    return value


def generate(work: Path, base: int, files: int) -> tuple[list[str], str]:
    from benchmarks.episodes_profile import profile_episodes
    from samples.files import write_jsonl

    folder = work / f"inc-{base}-{files}"
    paths = [folder / f"part-{i:03d}.jsonl" for i in range(files)]
    new = folder / "part-new.jsonl"
    if not new.exists():
        folder.mkdir(parents=True, exist_ok=True)
        episodes = iter(profile_episodes(base + base // 100, seed=base))
        per = base // files
        for path in paths:
            write_jsonl(path, (next(episodes) for _ in range(per)))
        write_jsonl(new, episodes)
        time.sleep(2.1)  # older than the racy window when the cache first records them
    return [str(p.resolve()) for p in paths], str(new.resolve())


def one_file(files: list[str], new: str) -> str:
    """Every episode of ``files`` and ``new`` in one file, in the same order."""
    target = Path(new).with_name("all-in-one.jsonl")
    if not target.exists():
        with open(target, "wb") as out:
            for path in [*files, new]:
                out.write(Path(path).read_bytes())
    return str(target)


def build(files: list[str], out: Path, cache: Path | None, staging: str = "") -> dict[str, float]:
    shutil.rmtree(out, ignore_errors=True)
    options = {
        "episodes": files,
        "out": str(out / "ds"),
        "rejects": str(out / "rejects.jsonl"),
        "cache_dir": str(cache or ""),
        "staging_compression": staging,
    }
    _, rss, stdout, _ = run_child(TIMED_BUILD, json.dumps(options))
    timing = json.loads(stdout.rsplit("TIMING ", 1)[1])
    return {
        "build_s": round(timing["build_s"], 2),
        "ingest_s": round(timing["ingest_s"], 2),
        "peak_rss_mib": round(rss),
    }


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=1000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    parser.add_argument("--staging-compression", default="", help="default: the builder's")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    files, new = generate(args.work, args.base, args.files)
    out, cache = (args.work / "inc-out").resolve(), (args.work / "inc-cache").resolve()
    shutil.rmtree(cache, ignore_errors=True)
    staging = args.staging_compression
    rows = {
        "full, no cache": build(files, out / "full", None, staging),
        "full, cold cache": build(files, out / "cold", cache, staging),
        "+1 % file, warm cache": build([*files, new], out / "inc", cache, staging),
        "+1 % file, no cache": build([*files, new], out / "ref", None, staging),
        # the same episodes in one file: what the segments cost a clean build
        "same episodes in one file, no cache": build([one_file(files, new)], out / "one", None),
    }
    same = digest(out / "inc" / "ds") == digest(out / "ref" / "ds")
    content = same_content(out / "inc" / "ds", out / "ref" / "ds")
    rejects = (out / "inc" / "rejects.jsonl").read_bytes() == (
        out / "ref" / "rejects.jsonl"
    ).read_bytes()
    full, inc = rows["+1 % file, no cache"], rows["+1 % file, warm cache"]
    print("| build | build_s | ingest_s | peak RSS MiB |\n|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['build_s']} | {row['ingest_s']} | {row['peak_rss_mib']} |")
    print(f"ingest: incremental / full = {inc['ingest_s'] / full['ingest_s']:.3f}")
    print(f"build:  incremental / full = {inc['build_s'] / full['build_s']:.3f}")
    single = rows["same episodes in one file, no cache"]
    print(f"build:  incremental / full from one file = {inc['build_s'] / single['build_s']:.3f}")
    print(f"dataset byte-identical to a clean build: {same}; same content: {content}")
    print(f"rejects byte-identical: {rejects}")
    if staging:
        default = build([*files, new], out / "ref-default", None)
        same_default = same_content(out / "ref-default" / "ds", out / "inc" / "ds")
        print(f"same content as a clean build with default staging: {same_default}")
        print(f"(that build: {default})")
    size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    print(f"cache size: {size / 1e6:.1f} MB")
    (args.work / "incremental.json").write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
