"""The build records its rejects file in the manifest (relative to the output folder, with
its sha256): ``episodes report`` finds it under any name, and says in one line when it was
moved or changed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INPUTS = [ROOT / "data" / "bad" / "bad_lines.jsonl", ROOT / "data" / "episodes" / "episodes.jsonl"]


def episodes(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *argv], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    done = episodes(
        "build", "--episodes", *map(str, INPUTS), "--out", "ds", "--rejects",
        "kept/odd name.jsonl", "--max-reject-ratio", "1", "--no-progress", cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root


def test_the_manifest_names_the_rejects_file_and_its_digest(built: Path) -> None:
    recorded = json.loads((built / "ds" / "manifest.json").read_text())["rejects"]
    assert recorded["file"] == "../kept/odd name.jsonl"
    import hashlib

    data = (built / "kept" / "odd name.jsonl").read_bytes()
    assert recorded["sha256"] == hashlib.sha256(data).hexdigest() and data


def test_report_finds_the_rejects_file_by_the_manifest(built: Path, tmp_path: Path) -> None:
    done = episodes("report", str(built / "ds"), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_moved_rejects_file_is_named_in_one_line(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(built / "ds", copy / "ds")
    done = episodes("report", str(copy / "ds"), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the rejects file this build wrote is not there" in lines[0]
    assert "--rejects FILE" in lines[0]
    moved = tmp_path / "moved.jsonl"
    shutil.copy(built / "kept" / "odd name.jsonl", moved)
    done = episodes(
        "report", str(copy / "ds"), "--rejects", str(moved), "--out", str(tmp_path / "r.html"),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_changed_rejects_file_is_named_in_one_line(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(built / "ds", copy / "ds")
    (copy / "kept").mkdir()
    changed = copy / "kept" / "odd name.jsonl"
    shutil.copy(built / "kept" / "odd name.jsonl", changed)
    with changed.open("a") as handle:
        handle.write("\n")
    done = episodes("report", str(copy / "ds"), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "changed since the build" in lines[0]
