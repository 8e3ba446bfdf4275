"""What a build may write over: only a folder a build made (or an empty one), never the
working directory; a rejects file is never a folder; a refused build leaves the build in
place whole, its rejects file included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builder.preflight import FolderProblem, check_rejects_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data/episodes/episodes.jsonl"


def episodes(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            *args,
            *(["--no-progress"] if args[0] == "build" else []),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_validate_refuses_a_folder_as_its_rejects_file(tmp_path: Path) -> None:
    (tmp_path / "somedir").mkdir()
    result = episodes("validate", str(SAMPLE), "--rejects", "somedir", cwd=tmp_path)
    assert result.returncode == 5
    assert one_line(result) == (
        "episodes validate: somedir is a folder, not a file to write — choose another --rejects"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["somedir"]  # no partial file left


def test_a_rejects_file_is_no_folder_and_no_input(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(FolderProblem, match="is a folder"):
        check_rejects_path(tmp_path / "d", [], "--rejects")
    (tmp_path / "in.jsonl").write_text("")
    with pytest.raises(FolderProblem, match="would be overwritten"):
        check_rejects_path(tmp_path / "in.jsonl", [str(tmp_path / "in.jsonl")], "--rejects")
    check_rejects_path(tmp_path / "new" / "r.jsonl", [str(tmp_path / "in.jsonl")], "--rejects")
    assert not (tmp_path / "new").exists()
