"""Incremental rebuilds (``builder.cache``): a build that reuses stored segments or replays
cached per-file batches is byte-identical to a clean build — dataset folder (manifest
included) and rejects file — and a damaged, partial or stale cache entry is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import builder.cache as cache_module
import builder.ingest.files as ingest_module
from builder.cache import cached_ingest, keys, memo
from builder.config import BuildConfig
from builder.pipeline import build
from samples.episodes import generate_episodes
from samples.files import write_jsonl
from samples.questions import generate_questions
from samples.variants import with_defects


@dataclass(frozen=True)
class CachedConfig(BuildConfig):
    """``BuildConfig`` plus the cache keys (``ingest_files`` reads them with getattr)."""

    cache_dir: Path | None = None
    cache_verify: bool = False


def folder_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def write_inputs(folder: Path) -> list[str]:
    """Three episode files with a duplicate id (within and across files), a bad line, a
    blank, an integrity-check failure and unknown fields; plus a question bank."""
    records = with_defects(generate_episodes(60, seed=3, question_pool=15))
    write_jsonl(folder / "b-first.jsonl", records[:40])
    write_jsonl(folder / "c-second.jsonl.gz", records[40:])
    write_jsonl(folder / "d-third.jsonl", generate_episodes(25, seed=4, question_pool=15))
    write_jsonl(folder / "bank.jsonl", generate_questions(6, seed=3))
    return [str(folder / n) for n in ("b-first.jsonl", "c-second.jsonl.gz", "d-third.jsonl")]


def config_for(folder: Path, episodes: list[str], name: str, **kw: Any) -> CachedConfig:
    kw.setdefault("segment_bytes", 1)  # a segment per file, however small
    return CachedConfig(
        episodes=tuple(episodes),
        synthetic_questions=(str(folder / "bank.jsonl"),),
        out=folder / name / "dataset",
        rejects=folder / name / "rejects.jsonl",
        max_reject_ratio=1.0,
        batch_lines=7,  # many batches per file
        **kw,
    )


def outputs(config: BuildConfig, previous: Path | None = None) -> dict[str, Any]:
    """What a build writes; ``previous``: an earlier build it starts from (copied to its
    output folder first), whose split assignment it keeps — as a cached build keeps the splits
    of the segments it reuses."""
    if previous is not None:
        shutil.copytree(previous, config.out)
    build(config)
    return {
        "dataset": folder_digest(config.out),
        "manifest": (config.out / "manifest.json").read_bytes(),
        "rejects": config.rejects.read_bytes(),
    }


class Spy:
    """Counts normalized batches, cache hits/misses, and the segments a build reused
    (``reused``) or built (``built``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.batches = 0
        self.hits = self.misses = 0
        self.reused: list[str] = []
        self.built: list[str] = []
        self.hashed: list[str] = []
        self.raw_reads: list[int] = []
        normalize = ingest_module.normalize_batch
        finish = cache_module.IngestCache.finish
        file_sha256 = keys.file_sha256

        def counted(*args: Any) -> Any:
            self.batches += 1
            return normalize(*args)

        def finished(cache: Any) -> None:
            self.hits, self.misses = cache.hits, cache.misses
            self.reused = sorted(cache.segments.reused)
            self.built = sorted(cache.segments.pending)
            finish(cache)

        def hashed(path: str) -> str:
            self.hashed.append(path)
            return file_sha256(path)

        get_raw = cached_ingest._RawLines.get

        def raw(lines: Any, number: int) -> bytes:
            self.raw_reads.append(number)
            return get_raw(lines, number)

        monkeypatch.setattr(cached_ingest._RawLines, "get", raw)
        monkeypatch.setattr(ingest_module, "normalize_batch", counted)
        monkeypatch.setattr(cache_module.IngestCache, "finish", finished)
        monkeypatch.setattr(keys, "file_sha256", hashed)

    def reset(self) -> None:
        self.batches = self.hits = self.misses = 0
        self.reused, self.built = [], []
        self.hashed = []
        self.raw_reads = []


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


@pytest.mark.parametrize("strict", [False, True])
def test_incremental_build_is_identical_to_a_clean_build(
    tmp_path: Path, spy: Spy, strict: bool
) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    clean = outputs(config_for(tmp_path, files, "clean", strict=strict))

    cold = outputs(config_for(tmp_path, files, "cold", strict=strict, cache_dir=cache))
    assert cold == clean
    assert (spy.hits, spy.misses) == (0, 3)

    spy.reset()
    warm = outputs(config_for(tmp_path, files, "warm", strict=strict, cache_dir=cache))
    assert warm == clean
    # every segment stored: nothing read, normalized or replayed
    assert (spy.hits, spy.misses, spy.batches) == (0, 0, 0)
    assert (spy.reused, spy.built) == (["00000", "00001", "00002", "00003"], [])

    # A new file that sorts first and repeats an episode id of a cached file: every
    # segment moves, so each is built again from its cached batches; the cached line
    # becomes a duplicate reject, whose raw text is read back from its input.
    later: list[Any] = list(generate_episodes(8, seed=9, question_pool=15))
    first_line = json.loads((tmp_path / "d-third.jsonl").read_text().splitlines()[2])
    later.append(first_line)
    write_jsonl(tmp_path / "a-new.jsonl", later)
    more = [str(tmp_path / "a-new.jsonl"), *files]
    clean_more = outputs(config_for(tmp_path, more, "clean-more", strict=strict))
    spy.reset()
    incremental = outputs(config_for(tmp_path, more, "inc", strict=strict, cache_dir=cache))
    assert incremental == clean_more
    assert (spy.hits, spy.misses) == (3, 1)
    assert spy.reused == ["00000"]  # the question banks only
    assert b"already seen at" in clean_more["rejects"]
    assert 3 in spy.raw_reads  # the duplicated line of d-third.jsonl, read back


@pytest.mark.parametrize("strict", [False, True])
def test_an_appended_file_rebuilds_only_its_own_segment(
    tmp_path: Path, spy: Spy, strict: bool
) -> None:
    """The daily case: a file that sorts last. Its episodes repeat an id of an earlier file
    (a duplicate reject that needs the stored ids), ask questions first seen in earlier
    files and in the bank (looked up from their published rows, ground truth included),
    and fail a check; only its segment is built, and the result is the clean build's."""
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "before", strict=strict, cache_dir=cache))
    # the same generator run on: new episodes of the first files' questions
    later: list[Any] = with_defects(list(generate_episodes(100, seed=3, question_pool=15))[60:])
    later.append(json.loads((tmp_path / "d-third.jsonl").read_text().splitlines()[0]))
    write_jsonl(tmp_path / "e-appended.jsonl", later)
    more = [*files, str(tmp_path / "e-appended.jsonl")]
    spy.reset()
    before = tmp_path / "before" / "dataset"
    incremental = outputs(
        config_for(tmp_path, more, "inc", strict=strict, cache_dir=cache), previous=before
    )
    assert spy.reused == ["00000", "00001", "00002", "00003"]
    assert spy.built == ["00004"]
    assert (spy.hits, spy.misses) == (0, 1)
    clean = outputs(config_for(tmp_path, more, "clean", strict=strict), previous=before)
    assert incremental == clean
    assert b"already seen at" in clean["rejects"]
    # the stored segments' files are the earlier build's, not rewritten
    after = tmp_path / "inc" / "dataset"
    for path in before.glob("*/*-0000[0-3]-*.parquet"):
        assert (after / path.relative_to(before)).stat().st_ino == path.stat().st_ino
        assert (after / path.relative_to(before)).read_bytes() == path.read_bytes()
    # rows of questions first seen in earlier files carry those questions' fields
    earlier = pl.read_parquet(after / "questions" / "*-0000[1-3]-*.parquet")
    sft = pl.read_parquet(after / "sft" / "*-00004-*.parquet").join(earlier, on="question_id")
    assert sft.height and sft.get_column("difficulty").null_count() == 0
    prompts = sft.select(pl.col("messages").list.get(1).struct.field("content"))
    assert all(q in p for q, p in zip(sft["question_text"], prompts.to_series(), strict=True))


def rows_of(dataset: Path, name: str) -> list[str]:
    """A config's rows across its files, in a canonical order (the cut is not compared)."""
    table = pl.read_parquet(dataset / name / "*.parquet")
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in table.to_dicts())


def test_small_files_share_a_segment_and_an_appended_one_rebuilds_that_run(
    tmp_path: Path, spy: Spy
) -> None:
    """Automatic segments (``segment_bytes`` 0): files far below the threshold are read and
    exported as one run, so many small files do not cost a segment (and a file per config
    and split) each; a file appended to the open run rebuilds that run, its earlier files
    replayed from their cached batches, and the result is the clean build's."""
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    auto = {"segment_bytes": 0}
    outputs(config_for(tmp_path, files, "before", cache_dir=cache, **auto))
    assert spy.built == ["00000", "00001"]  # the banks, and the three files as one run
    write_jsonl(tmp_path / "e-appended.jsonl", generate_episodes(12, seed=8, question_pool=15))
    more = [*files, str(tmp_path / "e-appended.jsonl")]
    spy.reset()
    incremental = outputs(config_for(tmp_path, more, "inc", cache_dir=cache, **auto))
    assert (spy.reused, spy.built) == (["00000"], ["00001"])
    assert (spy.hits, spy.misses) == (3, 1)
    clean = outputs(config_for(tmp_path, more, "clean", **auto))
    assert incremental == clean
    per_file = outputs(config_for(tmp_path, more, "per-file"))
    parquet = [len([f for f in o["dataset"] if f.endswith(".parquet")]) for o in (clean, per_file)]
    assert parquet[0] < parquet[1]
    for name in ("sft", "prm_stepwise", "dpo", "episodes", "questions"):
        runs, files_apart = (tmp_path / n / "dataset" for n in ("clean", "per-file"))
        assert rows_of(runs, name) == rows_of(files_apart, name)


@pytest.mark.parametrize("strict", [False, True])
def test_a_run_whose_middle_files_changed_replays_the_files_around_them(
    tmp_path: Path, spy: Spy, strict: bool
) -> None:
    """A run of small files shares batches; when files inside it change or are inserted,
    the files around them are replayed from their cached batches (each file's share of a
    batch is its own entry) and the new ones normalized together, in input order."""
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    auto = {"segment_bytes": 0, "strict": strict}
    outputs(config_for(tmp_path, files, "before", cache_dir=cache, **auto))
    changed = with_defects(generate_episodes(30, seed=12, question_pool=15))
    changed.append(json.loads((tmp_path / "d-third.jsonl").read_text().splitlines()[1]))
    write_jsonl(tmp_path / "c-second.jsonl.gz", changed)  # a duplicate of a later file's id
    write_jsonl(tmp_path / "c-third.jsonl", generate_episodes(9, seed=13, question_pool=15))
    more = [*files[:2], str(tmp_path / "c-third.jsonl"), files[2]]
    spy.reset()
    # both rebuild the earlier output folder, so both keep its splits; the cache changes
    # nothing in what they write
    before = tmp_path / "before" / "dataset"
    incremental = outputs(
        config_for(tmp_path, more, "inc", cache_dir=cache, **auto), previous=before
    )
    assert (spy.hits, spy.misses) == (2, 2)
    assert spy.batches >= 1
    clean = outputs(config_for(tmp_path, more, "clean", **auto), previous=before)
    assert incremental == clean
    assert b"already seen at" in clean["rejects"]


IMPORTED_BY_A_BUILD = """
import json, sys
from pathlib import Path
from builder.pipeline import build
from builder.cache import cached_ingest, keys, memo
from tests.e2e.test_incremental import config_for

folder, name, files = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
build(config_for(folder, files, name, cache_dir=folder / "cache"))
print(json.dumps([m for m in ("datasets", "matplotlib", "pandas") if m in sys.modules]))
"""


def test_a_cached_rebuild_imports_only_what_its_card_needs(tmp_path: Path) -> None:
    """No build imports ``datasets`` (≈ 0.7 CPU-s): the card's features are written from
    the schemas (``export.features``), and remembered with the cache. A rebuild that reuses
    every segment imports no pandas either (≈ 0.2 s). The charts are drawn with Pillow
    (``report.card_png``): no build imports matplotlib. Each build in a fresh interpreter."""
    files = write_inputs(tmp_path)
    (tmp_path / "e-appended.jsonl").write_bytes((tmp_path / "d-third.jsonl").read_bytes())
    more = [*files, str(tmp_path / "e-appended.jsonl")]

    def imported(name: str, episodes: list[str]) -> list[str]:
        args = [str(tmp_path), name, json.dumps(episodes)]
        run = subprocess.run(
            [sys.executable, "-c", IMPORTED_BY_A_BUILD, *args],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parents[2],
        )
        return list(json.loads(run.stdout.splitlines()[-1]))

    # pyarrow imports pandas to build an array from Python rows (in a library caller's
    # build: the command tells pyarrow it is absent, below)
    assert imported("first", files) == ["pandas"]
    assert imported("appended", more) == ["pandas"]
    assert imported("again", more) == []


COMMAND_AND_ITS_IMPORTS = """
import atexit, json, runpy, sys

shown = ("datasets", "matplotlib", "pandas")
atexit.register(lambda: print("IMPORTED " + json.dumps([m for m in shown if m in sys.modules])))
sys.argv = ["episodes", *sys.argv[1:]]
runpy.run_module("builder", run_name="__main__")
"""


def test_the_command_rebuilding_with_a_new_file_imports_no_pandas(tmp_path: Path) -> None:
    """``episodes build`` tells pyarrow pandas is absent (``builder.engine.no_pandas``): a
    rebuild that ingests one new file imports no pandas, where a library caller's build
    does (above)."""
    files = write_inputs(tmp_path)
    (tmp_path / "e-appended.jsonl").write_bytes((tmp_path / "d-third.jsonl").read_bytes())

    def imported(name: str, episodes: list[str]) -> list[str]:
        args = ["build", "--episodes", *episodes, "--max-reject-ratio", "1", "--no-progress"]
        args += ["--synthetic-questions", str(tmp_path / "bank.jsonl")]
        args += ["--out", str(tmp_path / name / "dataset"), "--cache-dir", str(tmp_path / "c")]
        args += ["--rejects", str(tmp_path / name / "rejects.jsonl")]
        run = subprocess.run(
            [sys.executable, "-c", COMMAND_AND_ITS_IMPORTS, *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # no dataset.toml here
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        )
        assert run.returncode == 0, run.stderr[-2000:]
        return list(json.loads(run.stdout.rpartition("IMPORTED ")[2]))

    imported("first", files)
    assert imported("appended", [*files, str(tmp_path / "e-appended.jsonl")]) == []


def test_a_damaged_stored_segment_is_built_again(tmp_path: Path, spy: Spy) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    clean = outputs(config_for(tmp_path, files, "clean"))
    outputs(config_for(tmp_path, files, "cold", cache_dir=cache))
    stored = sorted(cache.glob("segments/*/data/sft/*-00002-*.parquet"))
    assert stored and not stored[0].stat().st_mode & 0o222  # written read-only
    stored[0].chmod(0o644)
    stored[0].write_bytes(stored[0].read_bytes()[:-10])  # truncated
    spy.reset()
    assert outputs(config_for(tmp_path, files, "again", cache_dir=cache)) == clean
    assert (spy.reused, spy.built) == (["00000", "00001"], ["00002", "00003"])

    # a stored state file of the right size but unreadable: built again too
    entry = next(p.parents[2] for p in cache.glob("segments/*/data/sft/train-00001-*.parquet"))
    ids = entry / "first_seen.arrow"
    ids.write_bytes(b"\0" * ids.stat().st_size)
    spy.reset()
    assert outputs(config_for(tmp_path, files, "third", cache_dir=cache)) == clean
    assert (spy.reused, spy.built) == (["00000"], ["00001", "00002", "00003"])


def test_an_output_file_edited_in_place_is_not_reused(tmp_path: Path, spy: Spy) -> None:
    # A dataset file is the stored file (a hard link): one edited in place after a chmod,
    # keeping its size, changed the cache too. Its mtime says so; the segment is built again.
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    clean = outputs(config_for(tmp_path, files, "clean"))
    cold = config_for(tmp_path, files, "cold", cache_dir=cache)
    outputs(cold)
    (edited,) = sorted(cold.out.glob("sft/train-00002-*.parquet"))
    edited.chmod(0o644)
    data = bytearray(edited.read_bytes())
    data[len(data) // 2] ^= 0xFF
    edited.write_bytes(bytes(data))
    spy.reset()
    assert outputs(config_for(tmp_path, files, "again", cache_dir=cache)) == clean
    assert spy.built == ["00002", "00003"]


def test_unchanged_files_are_not_read_when_the_memo_is_trusted(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memo, "RACY_NS", 0)  # files are "old enough" at once
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "one", cache_dir=cache))
    spy.reset()
    outputs(config_for(tmp_path, files, "two", cache_dir=cache))
    assert len(spy.reused) == 4
    assert not set(spy.hashed) & set(files)  # no input was read to find its digest

    # Same size, other content: the stat changes, the file is hashed, and it is a miss.
    path = Path(files[2])
    data = path.read_bytes()
    index = data.index(b'"episode_id"') + len(b'"episode_id": "')
    path.write_bytes(data[:index] + bytes([data[index] ^ 1]) + data[index + 1 :])
    spy.reset()
    changed = outputs(config_for(tmp_path, files, "three", cache_dir=cache))
    assert (spy.hits, spy.misses, spy.reused) == (0, 1, ["00000", "00001", "00002"])
    assert files[2] in spy.hashed
    assert changed == outputs(config_for(tmp_path, files, "clean"))

    # cache_verify: every file is hashed, whatever the memo says.
    spy.reset()
    outputs(config_for(tmp_path, files, "four", cache_dir=cache, cache_verify=True))
    assert len(spy.reused) == 4 and set(files) <= set(spy.hashed)


def test_racy_or_touched_files_are_hashed_and_still_hit(tmp_path: Path, spy: Spy) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "one", cache_dir=cache))
    os.utime(files[0])  # touched: new mtime, same bytes
    spy.reset()
    outputs(config_for(tmp_path, files, "two", cache_dir=cache))
    assert (spy.hits, spy.misses, spy.batches, len(spy.reused)) == (0, 0, 0, 4)
    assert files[0] in spy.hashed


def test_damaged_or_partial_entries_are_rebuilt(tmp_path: Path, spy: Spy) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    clean = outputs(config_for(tmp_path, files, "clean"))
    outputs(config_for(tmp_path, files, "cold", cache_dir=cache))
    shutil.rmtree(cache / "segments")  # so that every file's batches are replayed
    entries = sorted(p for p in (cache / "entries").iterdir())
    assert len(entries) == 3
    # truncated IPC file, a flipped byte, a missing meta.json (killed before the rename
    # cannot happen, but a hand-made copy can), and a leftover temporary folder
    hooks = entries[0] / "hooks.arrow"
    hooks.write_bytes(hooks.read_bytes()[:-20])
    turns = entries[1] / "turns.arrow"
    data = bytearray(turns.read_bytes())
    data[len(data) // 2] ^= 0xFF
    turns.write_bytes(bytes(data))
    (entries[2] / "meta.json").unlink()
    partial = cache / "entries" / ".tmp-999999999-1"
    partial.mkdir()
    (partial / "outcomes.arrow").write_bytes(b"half")
    spy.reset()
    assert outputs(config_for(tmp_path, files, "again", cache_dir=cache)) == clean
    assert (spy.hits, spy.misses) == (0, 3)
    assert not partial.exists()
    shutil.rmtree(cache / "segments")
    spy.reset()
    assert outputs(config_for(tmp_path, files, "warm", cache_dir=cache)) == clean
    assert (spy.hits, spy.misses) == (3, 0)


def test_options_that_change_normalization_are_in_the_key(tmp_path: Path, spy: Spy) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "one", cache_dir=cache))
    spy.reset()
    small = outputs(config_for(tmp_path, files, "two", cache_dir=cache, hook_value_limit=50))
    assert spy.misses == 3
    assert small == outputs(config_for(tmp_path, files, "clean", hook_value_limit=50))
    spy.reset()
    loose = outputs(config_for(tmp_path, files, "three", cache_dir=cache, answer_tolerance=0.1))
    assert spy.misses == 3
    assert loose == outputs(config_for(tmp_path, files, "clean-loose", answer_tolerance=0.1))


def test_eviction_keeps_the_last_builds_entries(tmp_path: Path, spy: Spy) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "one", cache_dir=cache))
    outputs(config_for(tmp_path, files[:2], "two", cache_dir=cache))
    entries = [p for p in (cache / "entries").iterdir()]
    assert len(entries) == 2
    index = json.loads((cache / "index.json").read_text())
    assert sorted(index["files"]) == sorted(files[:2])


def test_a_cache_in_use_by_another_build_is_bypassed(
    tmp_path: Path, spy: Spy, capsys: pytest.CaptureFixture[str]
) -> None:
    import fcntl

    from builder.cli.summary import print_summary

    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    with open(cache / ".lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        locked = config_for(tmp_path, files, "locked", cache_dir=cache)
        report = build(locked)
    print_summary(report)
    assert f"another build was using the cache {cache}" in capsys.readouterr().out
    result = {
        "dataset": folder_digest(locked.out),
        "manifest": (locked.out / "manifest.json").read_bytes(),
        "rejects": locked.rejects.read_bytes(),
    }
    assert result == outputs(config_for(tmp_path, files, "clean"))
    assert not any((cache / "entries").iterdir())  # nothing written by the bypassed build
    assert not any((cache / "segments").iterdir())


def test_code_digest_covers_the_normalizer() -> None:
    # the modules whose code decides what a cached batch holds are in the digest
    root = Path(keys.__file__).resolve().parents[2]
    seen = []
    original = Path.read_bytes

    def spy_read(self: Path) -> bytes:
        seen.append(self.resolve().relative_to(root).as_posix())
        return original(self)

    keys.code_digest.cache_clear()
    try:
        Path.read_bytes = spy_read  # type: ignore[method-assign]
        keys.code_digest()
    finally:
        Path.read_bytes = original  # type: ignore[method-assign]
    for module in (
        "builder/cache/cached_ingest.py",
        "builder/cache/entries.py",
        "builder/normalize/episode.py",
        "builder/normalize/hooks.py",
        "builder/ingest/files.py",
        "builder/ingest/codec.py",
        "builder/validate/fastpath.py",
        "builder/validate/validator.py",
        "builder/validate/json_lines.py",
        "builder/normalize/checks.py",
        "builder/contract/hashing.py",
        "builder/contract/stored_values.py",
        "builder/sources/inputs.py",
        "schemas/episode.py",
        "schemas/tables.py",
        "schemas/vocabulary.py",
    ):
        assert module in seen


def test_segment_keys_follow_the_options_that_change_the_output(tmp_path: Path, spy: Spy) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "one", cache_dir=cache))
    spy.reset()
    outputs(config_for(tmp_path, files, "two", cache_dir=cache, dpo_max_pairs_per_episode=4))
    assert len(spy.reused) == 4  # the default, spelled out: the same key
    spy.reset()
    outputs(config_for(tmp_path, files, "three", cache_dir=cache, workers=2))
    assert len(spy.reused) == 4  # how the build runs does not change what it writes
    spy.reset()
    salted = outputs(config_for(tmp_path, files, "four", cache_dir=cache, split_salt="other"))
    assert (spy.reused, len(spy.built)) == ([], 4)
    assert salted == outputs(config_for(tmp_path, files, "clean", split_salt="other"))


def test_an_eval_set_edited_in_place_rebuilds_every_segment(tmp_path: Path, spy: Spy) -> None:
    """The eval file keeps its path but gains an item that copies a training question: no
    stored segment may be reused (its rows would still train), and the rebuild equals a
    clean build against the edited file."""
    files = write_inputs(tmp_path)
    evals, cache = tmp_path / "evals.jsonl", tmp_path / "cache"
    evals.write_text(json.dumps({"question": "an unrelated item about the weather"}) + "\n")
    outputs(
        config_for(tmp_path, files, "one", cache_dir=cache, decontamination_evals=(str(evals),))
    )
    copied = json.loads(Path(files[0]).read_text().splitlines()[0])["question"]["question_text"]
    with evals.open("a") as more:
        more.write(json.dumps({"question": copied}) + "\n")
    spy.reset()
    again = outputs(
        config_for(tmp_path, files, "two", cache_dir=cache, decontamination_evals=(str(evals),))
    )
    assert (spy.reused, len(spy.built)) == ([], 4)
    clean = outputs(config_for(tmp_path, files, "clean", decontamination_evals=(str(evals),)))
    assert again == clean
    manifest = json.loads(again["manifest"])
    assert manifest["decontamination"]["evals"][0]["matched_questions"] >= 1
    assert manifest["decontamination"]["removed_rows"]  # the copy's rows left training


@pytest.mark.parametrize("full", [True, False], ids=["disk-full", "other-failure"])
def test_a_build_the_disk_stops_gives_back_what_it_stored_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full: bool
) -> None:
    """The disk fills after every segment was stored: the entries and segments this build
    added go (their space is its rerun's); another failure keeps them for the rerun; and
    what earlier builds stored stays either way."""
    import errno

    from builder import export

    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files[:1], "one", cache_dir=cache))

    def stored() -> set[str]:
        return {f"{p.parent.name}/{p.name}" for p in cache.glob("*/*") if p.is_dir()}

    before = stored()
    error = OSError(errno.ENOSPC, "No space left on device") if full else RuntimeError("bug")

    def fails(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(export, "export_dataset", fails)
    with pytest.raises(type(error)):
        build(config_for(tmp_path, files, "two", cache_dir=cache))
    after = stored()
    assert before <= after
    assert (after == before) if full else (len(after) > len(before))


def test_the_summary_says_what_the_cache_served(
    tmp_path: Path, spy: Spy, capsys: pytest.CaptureFixture[str]
) -> None:
    from builder.cli.summary import print_summary

    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "one", cache_dir=cache))
    print_summary(build(config_for(tmp_path, files, "two", cache_dir=cache)))
    text = capsys.readouterr().out
    assert re.search(r"segments reused\s+4\n\s+segments built\s+0\n", text)
    print_summary(build(config_for(tmp_path, files, "three")))
    assert "incremental cache" not in capsys.readouterr().out


def test_removing_the_first_file_moves_every_segment_and_matches_a_clean_build(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    outputs(config_for(tmp_path, files, "one", cache_dir=cache))
    spy.reset()
    fewer = outputs(config_for(tmp_path, files[1:], "two", cache_dir=cache))
    assert (spy.reused, spy.built) == (["00000"], ["00001", "00002"])
    assert (spy.hits, spy.misses) == (2, 0)  # both files replayed from their batches
    assert fewer == outputs(config_for(tmp_path, files[1:], "clean"))

    # another polars: every segment is built again (it derives every config)
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "0.0" if name == "polars" else real(name)
    )
    spy.reset()
    outputs(config_for(tmp_path, files[1:], "three", cache_dir=cache))
    assert spy.reused == [] and len(spy.built) == 3
