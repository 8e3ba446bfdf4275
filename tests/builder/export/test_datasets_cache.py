"""What ``datasets.load_dataset`` returns after a rebuild: always the latest build.

``datasets`` keys its cache of a local folder on the folder's name and the card's YAML, not
on the files' content; the card therefore lists every data file by a name that carries its
digest. Each load runs in a fresh process, sharing one cache folder, as training jobs do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

from builder.config import BuildConfig
from builder.pipeline import build
from samples.episodes import generate_episodes

LOAD = """
import json, sys, datasets
splits = datasets.load_dataset(sys.argv[1], "sft")
print(json.dumps(sorted(e for s in splits.values() for e in s["episode_id"])))
"""


def build_into(out: Path, n: int, seed: int) -> None:
    source = out.parent / f"episodes-{n}-{seed}.jsonl"
    source.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in generate_episodes(n, seed)))
    config = BuildConfig(episodes=(str(source),), out=out, rejects=out.parent / "rejects.jsonl")
    build(config)


def load_sft(folder: Path, cache: Path) -> list[str]:
    env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", LOAD, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(result.stdout.splitlines()[-1])


def expected_sft(folder: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(pq.read_table(folder / "sft", columns=["episode_id"])["episode_id"].to_pylist())


def cached_tables(cache: Path) -> set[Path]:
    return set(cache.rglob("*.arrow"))


def test_a_rebuild_into_the_same_folder_is_what_loads(tmp_path: Path) -> None:
    out, cache = tmp_path / "dataset", tmp_path / "hf-cache"
    build_into(out, 12, 1)
    first = load_sft(out, cache)
    assert first == expected_sft(out) and first
    build_into(out, 30, 2)  # other episodes, same folder
    second = load_sft(out, cache)
    assert second == expected_sft(out)
    assert second != first


def test_same_named_folders_in_two_places_load_their_own_rows(tmp_path: Path) -> None:
    cache = tmp_path / "hf-cache"
    a, b = tmp_path / "a" / "dataset", tmp_path / "b" / "dataset"
    a.parent.mkdir()
    b.parent.mkdir()
    build_into(a, 12, 3)
    build_into(b, 20, 4)
    assert load_sft(a, cache) == expected_sft(a)
    assert load_sft(b, cache) == expected_sft(b)
    assert expected_sft(a) != expected_sft(b)


def test_an_unchanged_rebuild_reuses_the_cache(tmp_path: Path) -> None:
    out, cache = tmp_path / "dataset", tmp_path / "hf-cache"
    build_into(out, 12, 5)
    names = sorted(p.name for p in (out / "sft").iterdir())
    first = load_sft(out, cache)
    tables = cached_tables(cache)
    assert tables
    build_into(out, 12, 5)
    assert sorted(p.name for p in (out / "sft").iterdir()) == names  # same content, same names
    assert load_sft(out, cache) == first
    assert cached_tables(cache) == tables  # nothing prepared again
