"""A full disk in one line: the estimates it names, and the folder it picks."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from builder.errors import UNAVAILABLE
from builder.fs import space


def a_build(folder: Path, input_bytes: int, data: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "data.parquet").write_bytes(b"x" * data)
    manifest = {"builder_version": "0", "inputs": [{"path": "a.jsonl", "bytes": input_bytes}]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_rebuild_needs_the_previous_build_scaled_by_its_input(tmp_path: Path) -> None:
    out = a_build(tmp_path / "ds", input_bytes=1_000, data=10_000)
    size = space.folder_size(out)
    assert space.final_size(out, 2_000) == 2 * size
    (out / "link.parquet").hardlink_to(out / "data.parquet")  # a cached segment's file
    assert space.folder_size(out) == size


def test_a_first_build_is_estimated_from_its_input(tmp_path: Path) -> None:
    assert space.final_size(tmp_path / "none", 1_000_000) == 150_000


def test_a_build_the_disk_cannot_hold_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = a_build(tmp_path / "ds", input_bytes=1_000, data=3 << 20)
    monkeypatch.setattr(space, "free_bytes", lambda folder: 1 << 20)
    with pytest.raises(space.DiskFull) as caught:
        space.check_room(out, 1_000)
    assert caught.value.exit_code == UNAVAILABLE
    assert str(caught.value) == (
        f"no space left on the device of {tmp_path}: 1.0 MB free, the build needs about "
        "3.0 MB there"
    )
    space.check_room(out, 300)  # a tenth of the input: room enough


def test_the_folder_named_is_the_one_of_the_file_that_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    monkeypatch.setattr(space, "free_bytes", lambda folder: 0 if folder == out else 10 << 20)
    failed = OSError(errno.ENOSPC, "No space left on device", str(cache / "entry" / "x.arrow"))
    free, needed = {out: 1 << 20, cache: 2 << 20}, {out: 0, cache: 3 << 20}
    said = space.disk_full(failed, free, needed)
    assert said.folder == cache
    assert str(said) == (
        f"the device of {cache} filled up during the build: it needs more than the 2.0 MB "
        "that were free, about 3.0 MB"
    )
    # A copy from the output into the cache names its source first: the target filled up.
    copied = OSError(errno.ENOSPC, "No space left on device", str(out / "a"), None, str(cache))
    assert copied.filename2 == str(cache)
    assert space.disk_full(copied, free, needed).folder == cache
    # A file no folder holds (pyarrow names none): the folder with the least room.
    unnamed = OSError(errno.ENOSPC, "No space left on device")
    assert space.disk_full(unnamed, free, needed).folder == out
    assert str(space.disk_full(unnamed, free, needed)) == (
        f"the device of {out} filled up during the build: it needs more than the 1.0 MB "
        "that were free"
    )


def test_only_a_full_disk_is_one() -> None:
    assert space.is_disk_full(OSError(errno.ENOSPC, "full"))
    assert space.is_disk_full(OSError(errno.EDQUOT, "quota"))
    assert not space.is_disk_full(OSError(errno.EACCES, "denied"))
    assert not space.is_disk_full(ValueError("no"))
