"""What a killed build leaves beside its folder is found and removed, never a running
build's files nor the build itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from builder.fs import leftovers
from builder.fs.output import output_lock


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def killed_build(root: Path) -> tuple[Path, dict[str, Path]]:
    out = root / "ds"
    out.mkdir(parents=True)
    (out / "manifest.json").write_text("{}")
    work = root / ".ds.work"
    (work / "dataset").mkdir(parents=True)
    (work / "dataset" / "x.parquet").write_bytes(b"x" * 4096)
    pid = dead_pid()
    restored = root / f".ds.from.{pid}"  # the inputs a build --from wrote back
    restored.mkdir()
    (restored / "episodes.jsonl").write_text("{}\n")
    left = {
        "work": work,
        "from": restored,
        "lock": root / ".ds.lock",
        "partial": root / f".rejects.jsonl.{pid}.partial",
    }
    left["lock"].write_text("")
    left["partial"].write_text("{}\n")
    return out, left


def test_a_killed_builds_files_are_removed_and_named(tmp_path: Path) -> None:
    out, left = killed_build(tmp_path)
    mine = tmp_path / f".rejects.jsonl.{os.getpid()}.partial"  # a running process's
    mine.write_text("")
    other = tmp_path / f".video.mp4.{dead_pid()}.partial"  # another program's
    other.write_text("")
    running = tmp_path / f".ds.from.{os.getpid()}"  # a running build --from's inputs
    running.mkdir()
    removed = leftovers.remove(out, tmp_path / "rejects.jsonl")
    assert sorted(p for p, _ in removed) == sorted(left.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["ds", mine.name, other.name, running.name]
    )
    assert (out / "manifest.json").read_text() == "{}"
    line = leftovers.said(removed)
    assert line.startswith("removed what an interrupted build left: ")
    assert ".ds.work" in line and ".ds.lock" in line and "MB freed" in line
    assert leftovers.remove(out) == [] and leftovers.said([]) == ""


def test_a_rejects_file_elsewhere_is_looked_for_by_its_name(tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    (tmp_path / "logs").mkdir()
    pid = dead_pid()
    named = tmp_path / "logs" / f".bad.txt.{pid}.partial"
    named.write_text("")
    assert leftovers.remove(tmp_path / "ds") == []  # not a .jsonl: found only when named
    assert [p for p, _ in leftovers.remove(tmp_path / "ds", tmp_path / "logs" / "bad.txt")] == [
        named
    ]


def test_nothing_is_touched_while_a_build_holds_the_folder(tmp_path: Path) -> None:
    out, left = killed_build(tmp_path)
    with output_lock(out):
        assert leftovers.remove(out) == []
        assert all(p.exists() for p in left.values())


def test_a_previous_build_left_aside_by_a_swap_is_put_back(tmp_path: Path) -> None:
    old = tmp_path / ".ds.old"
    old.mkdir()
    (old / "manifest.json").write_text("{}")
    leftovers.remove(tmp_path / "ds")
    assert (tmp_path / "ds" / "manifest.json").read_text() == "{}" and not old.exists()


def test_a_folder_that_does_not_exist_has_nothing_to_remove(tmp_path: Path) -> None:
    assert leftovers.remove(tmp_path / "no" / "ds") == []
    assert not (tmp_path / "no").exists()
