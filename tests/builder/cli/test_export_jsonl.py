"""``episodes export-jsonl``: a build's episodes on standard output or in a file; a folder
that holds no build, or one from before the tables kept every field, is one line, exit 1."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from builder.cli.episodes import main
from builder.errors import UNAVAILABLE
from builder.fs.storage import file_sha256
from builder.pipeline import BuildReport


def test_the_lines_go_to_standard_output(
    sample_build: BuildReport, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export-jsonl", str(sample_build.out)]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == sum(sample_build.manifest["configs"]["episodes"]["rows"].values())
    assert {"seeds", "capture_v2"} == {
        "capture_v2" if "gold_trace" in line else "seeds" for line in lines
    }
    assert err.strip() == f"{len(lines)} episodes → standard output"


def test_a_folder_without_a_build_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export-jsonl", str(tmp_path), "--out", str(tmp_path / "e.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no build there" in err[0]
    assert not (tmp_path / "e.jsonl").exists()


def test_a_build_from_before_the_round_trip_is_one_line(
    sample_build: BuildReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old"
    shutil.copytree(sample_build.out, old)
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["round_trip"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    assert main(["export-jsonl", str(old), "--out", str(tmp_path / "e.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "build it again from its JSONL" in err[0]
    assert not list(tmp_path.glob("e.jsonl*"))  # no half-written file


def test_a_patch_that_no_longer_fits_is_one_line(
    sample_build: BuildReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import polars as pl

    changed = tmp_path / "changed"
    shutil.copytree(sample_build.out, changed)
    manifest = json.loads((changed / "manifest.json").read_text())
    for path in (changed / "episodes").glob("*.parquet"):
        frame = pl.read_parquet(path)
        frame.with_columns(line_patch=pl.lit('[[["nowhere", "at", "all"]]]')).write_parquet(path)
        # as a builder that computed these patches would have recorded the file
        manifest["files"][f"episodes/{path.name}"] = file_sha256(path)
    (changed / "manifest.json").write_text(json.dumps(manifest))
    assert main(["export-jsonl", str(changed), "--out", str(tmp_path / "e.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line_patch does not fit its rows" in err[0]


@pytest.mark.parametrize(
    "damage", ["truncated", "removed", "renamed", "added", "manifest", "no-files"]
)
def test_a_build_whose_files_changed_after_it_is_refused_in_one_line(
    sample_build: BuildReport, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(sample_build.out, damaged)
    turns = sorted((damaged / "turns").glob("*.parquet"))[0]
    if damage == "truncated":
        turns.write_bytes(turns.read_bytes()[:100])
    elif damage == "removed":
        turns.unlink()
    elif damage == "renamed":
        turns.rename(turns.with_name("train-00001-00000-of-00001-0000000000000000.parquet"))
    elif damage == "added":
        shutil.copy(turns, damaged / "turns" / "extra.parquet")
    elif damage == "no-files":  # the list cut from the manifest, then a file removed
        manifest = json.loads((damaged / "manifest.json").read_text())
        del manifest["files"]
        (damaged / "manifest.json").write_text(json.dumps(manifest))
        turns.unlink()
    else:
        (damaged / "manifest.json").write_text("{")
    out = tmp_path / "e.jsonl"
    assert main(["export-jsonl", str(damaged), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    said = {
        "truncated": f"turns/{turns.name}: not the file manifest.json records",
        "removed": f"turns/{turns.name}: manifest.json lists it, but it is not there",
        "renamed": f"turns/{turns.name}: manifest.json lists it, but it is not there",
        "added": "turns/extra.parquet: not a file manifest.json lists",
        "manifest": "manifest.json is unreadable",
        "no-files": "manifest.json lists no files",
    }[damage]
    assert said in err[0]
    assert not list(tmp_path.glob("e.jsonl*"))


def test_out_into_a_pipe_is_written_through_and_left_a_pipe(
    sample_build: BuildReport, tmp_path: Path
) -> None:
    import os
    import stat
    import threading

    fifo = tmp_path / "episodes.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["export-jsonl", str(sample_build.out), "--out", str(fifo)]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    lines = got[0].decode().splitlines()
    assert lines and all(json.loads(line)["episode_id"] for line in lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.fifo"]


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (errno.ENOSPC, "no space left on the device writing {out} — free space there"),
        (errno.EACCES, "cannot use {out}: Permission denied — choose another path"),
    ],
)
def test_a_full_disk_or_a_closed_folder_is_said_as_for_any_command(
    sample_build: BuildReport,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: int,
    said: str,
) -> None:
    """The disk fills while the lines are written: exit 5 and what to do, not a usage error
    pointing at the command line; nothing is left behind."""
    from builder.restore import episodes

    def half_written(lines: object, out: Any) -> int:
        out.write("{}\n")
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(episodes, "write_lines", half_written)
    out = tmp_path / "e.jsonl"
    assert main(["export-jsonl", str(sample_build.out), "--out", str(out)]) == UNAVAILABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said.format(out=out) in err[0], err
    assert list(tmp_path.iterdir()) == []
