"""A build's files reach the disk before it replaces the previous build
(``builder.fs.durable``, ``builder.fs.output.swap``)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.fs import durable, output
from builder.ingest.rejects import RejectsWriter


def _synced(monkeypatch: pytest.MonkeyPatch, before: Callable[[], bool]) -> list[tuple[Path, bool]]:
    """Every fsync from now on: (the path it flushed, ``before()`` at that moment)."""
    calls: list[tuple[Path, bool]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        calls.append((Path(os.readlink(f"/proc/self/fd/{fd}")), before()))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def _a_build(folder: Path, marker: str) -> Path:
    (folder / "sft").mkdir(parents=True)
    (folder / "sft" / "train.parquet").write_text(marker)
    (folder / "manifest.json").write_text(marker)
    return folder


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two renames"])
def test_every_file_and_folder_is_flushed_before_the_swap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    out = _a_build(tmp_path / "ds", "old")
    staged = _a_build(tmp_path / ".ds.work" / "staged", "new")
    if not exchange:
        monkeypatch.setattr(output, "exchange", lambda a, b: False)
    in_place = out / "sft" / "train.parquet"
    calls = _synced(monkeypatch, lambda: in_place.exists() and in_place.read_text() == "old")
    output.swap(staged, out)
    assert in_place.read_text() == "new"
    flushed_before = {path for path, before in calls if before}
    assert {staged, staged / "sft", staged / "sft" / "train.parquet"} <= flushed_before
    assert staged / "manifest.json" in flushed_before
    assert (tmp_path, False) in calls  # the folder the swap changed, after it


def test_a_failed_flush_leaves_the_previous_build_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _a_build(tmp_path / "ds", "old")
    staged = _a_build(tmp_path / ".ds.work" / "staged", "new")

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match="Input/output"):
        output.swap(staged, out)
    assert (out / "sft" / "train.parquet").read_text() == "old"


def test_a_folder_the_system_will_not_flush_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, files = os.fsync, []

    def no_folders(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EINVAL, "Invalid argument")
        files.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", no_folders)
    durable.sync_tree(_a_build(tmp_path / "b", "x"))
    assert len(files) == 2


def test_links_are_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = _a_build(tmp_path / "elsewhere", "x")
    build = _a_build(tmp_path / "b", "x")
    (build / "link").symlink_to(elsewhere)
    (build / "file-link").symlink_to(elsewhere / "manifest.json")
    calls = _synced(monkeypatch, lambda: True)
    durable.sync_tree(build)
    assert len(calls) == 4  # two files, two folders
    assert not [path for path, _ in calls if path.is_relative_to(elsewhere)]


def test_the_rejects_file_is_flushed_before_it_is_moved_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "rejects.jsonl"
    writer = RejectsWriter(target)
    calls = _synced(monkeypatch, target.exists)
    writer.close()
    assert target.exists()
    partial, folder = calls
    assert partial == (tmp_path / f".rejects.jsonl.{os.getpid()}.partial", False)
    assert folder == (tmp_path, True)
