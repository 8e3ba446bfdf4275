"""A rebuild does not flush again the files it links from cached segments a build flushed
before, and flushes every other (``builder.cache.segments``, ``builder.fs.durable``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builder.cache import segments
from builder.config import BuildConfig
from builder.pipeline import build
from samples.episodes import generate_episodes
from samples.files import write_jsonl

FILES = 3


def _inputs(folder: Path, files: int) -> list[str]:
    episodes = list(generate_episodes(30, seed=11, question_pool=12))
    paths = []
    for i in range(files):
        path = folder / f"part-{i}.jsonl"
        if not path.exists():
            write_jsonl(path, episodes[i * 10 : (i + 1) * 10])
        paths.append(str(path))
    return paths


def _config(folder: Path, files: int) -> BuildConfig:
    return BuildConfig(
        episodes=tuple(_inputs(folder, files)),
        out=folder / "out" / "dataset",
        rejects=folder / "out" / "rejects.jsonl",
        cache_dir=folder / "cache",
        segment_bytes=1,  # a segment per file
        max_reject_ratio=1.0,
    )


def _flushed_files(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every regular file fsynced from now on."""
    flushed: list[Path] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if path.is_file():
            flushed.append(path)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return flushed


def _entries(cache: Path) -> list[Path]:
    return [p for p in (cache / "segments").iterdir() if not p.name.startswith(".")]


def test_a_build_marks_the_segments_it_flushed(tmp_path: Path) -> None:
    build(_config(tmp_path, FILES))
    entries = _entries(tmp_path / "cache")
    assert len(entries) > FILES  # a segment per file, and the question banks' (empty)
    assert all((entry / segments.FLUSHED).is_file() for entry in entries)


def test_a_rebuild_flushes_only_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(_config(tmp_path, FILES - 1))
    linked = {p.name for p in (tmp_path / "out" / "dataset").rglob("*.parquet")}
    flushed = _flushed_files(monkeypatch)
    build(_config(tmp_path, FILES))
    names = {p.name for p in flushed}
    assert not names & linked  # the stored segments' files, flushed by the build before
    # the added segment's data files and the card and manifest are flushed
    assert {"README.md", "manifest.json"} <= names
    written = {p.name for p in (tmp_path / "out" / "dataset").rglob("*.parquet")} - linked
    assert written and written <= names


def test_segments_stored_by_a_build_that_never_flushed_are_flushed_when_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(_config(tmp_path, FILES - 1))
    for entry in _entries(tmp_path / "cache"):  # as if the build had died before its flush
        (entry / segments.FLUSHED).unlink()
    linked = {p.name for p in (tmp_path / "out" / "dataset").rglob("*.parquet")}
    flushed = _flushed_files(monkeypatch)
    build(_config(tmp_path, FILES))
    assert linked <= {p.name for p in flushed}
    assert all((e / segments.FLUSHED).is_file() for e in _entries(tmp_path / "cache"))


def test_a_stored_copy_is_flushed_where_the_files_cannot_be_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: object, target: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(segments.os, "link", no_links)
    flushed = _flushed_files(monkeypatch)
    build(_config(tmp_path, 1))
    # flushed as written, before the entry was renamed into place: compared by name
    stored = {p.name for p in flushed if "segments" in p.parts and p.suffix == ".parquet"}
    data = {p.name for p in (tmp_path / "cache" / "segments").rglob("*.parquet")}
    assert data and data == stored
