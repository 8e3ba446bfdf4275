"""A folder that is not a complete build gets one line naming what is missing (exit 1), from
the installed ``episodes report`` command, never a traceback."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.pipeline import BuildReport

EPISODES = Path(sys.executable).parent / "episodes"


def _copy(build: BuildReport, tmp: Path) -> Path:
    folder = tmp / "dataset"
    shutil.copytree(build.out, folder)
    return folder


def _edit_manifest(folder: Path, edit: Callable[[dict], None]) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def no_folder(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    return [str(tmp / "nowhere")], "no such build folder"


def not_a_folder(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    (tmp / "dataset.txt").write_text("a file")
    return [str(tmp / "dataset.txt")], "not a folder, so no build folder"


def no_manifest(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    (folder / "manifest.json").unlink()
    return [str(folder)], "no manifest.json"


def broken_manifest(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    (folder / "manifest.json").write_text("{not json")
    return [str(folder)], "manifest.json: unreadable"


def older_builder(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)

    def drop(m: dict) -> None:
        del m["files"], m["training_exclusions"]
        m["builder_version"] = "0.0.9"

    _edit_manifest(folder, drop)
    return [str(folder)], "older builder (version 0.0.9): it has no 'files', 'training_exclusions'"


def missing_parquet(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    first = sorted((folder / "sft").glob("*.parquet"))[0]
    first.unlink()
    return [str(folder)], f"sft/{first.name}, listed in manifest.json, is missing"


def missing_image(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    (folder / "images" / "funnel.png").unlink()
    return [str(folder)], "images/funnel.png, listed in manifest.json, is missing"


def cut_short_parquet(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    first = sorted((folder / "sft").glob("*.parquet"))[0]
    first.write_bytes(first.read_bytes()[:100])
    return [str(folder)], f"sft/{first.name}: changed since the build (its sha256 is not"


def unreadable_as_recorded(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    """A file the manifest records as it is, but that is no Parquet (a builder's bug)."""
    folder = _copy(build, tmp)
    first = sorted((folder / "sft").glob("*.parquet"))[0]
    first.write_bytes(b"not parquet")
    digest = hashlib.sha256(b"not parquet").hexdigest()
    _edit_manifest(folder, lambda m: m["files"].update({f"sft/{first.name}": digest}))
    return [str(folder)], f"sft/{first.name}: cannot be read ("


def stale_rejects(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    rejects = tmp / "rejects.jsonl"
    rejects.write_text(json.dumps({"kind": "schema", "source_file": "x", "line": 1}) + "\n")
    return [str(folder), "--rejects", str(rejects)], "is not this build's rejects file"


def missing_rejects(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    _edit_manifest(folder, lambda m: m["rejects"].update(total=2, by_kind={"schema": 2}))
    gone = tmp / "gone.jsonl"
    return [str(folder), "--rejects", str(gone)], f"{gone}: no such file"


def out_inside(build: BuildReport, tmp: Path) -> tuple[list[str], str]:
    folder = _copy(build, tmp)
    return [str(folder), "--out", str(folder / "report.html")], "is inside the build folder"


CASES = [
    no_folder,
    not_a_folder,
    no_manifest,
    broken_manifest,
    older_builder,
    missing_parquet,
    missing_image,
    cut_short_parquet,
    unreadable_as_recorded,
    stale_rejects,
    missing_rejects,
    out_inside,
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_an_incomplete_build_is_one_line(
    case: Callable[[BuildReport, Path], tuple[list[str], str]],
    sample_build: BuildReport,
    tmp_path: Path,
) -> None:
    argv, named = case(sample_build, tmp_path)
    out = tmp_path / "report.html"
    if "--out" not in argv:
        argv += ["--out", str(out)]
    proc = subprocess.run(
        [str(EPISODES), "report", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("episodes report: ") and " — " in lines[0], lines[0]
    assert named in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists() and not (tmp_path / "dataset" / "report.html").exists()


def test_an_unwritable_output_is_an_environment_problem(
    sample_build: BuildReport, tmp_path: Path
) -> None:
    rejects = sample_build.out.parent / "rejects.jsonl"
    argv = [str(sample_build.out), "--rejects", str(rejects), "--out", "/proc/x/r.html"]
    proc = subprocess.run(
        [str(EPISODES), "report", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.startswith("episodes report: cannot write /proc/x/r.html")
    assert "— choose another --out" in proc.stderr and "Traceback" not in proc.stderr


def test_the_command_writes_the_report(sample_build: BuildReport, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    rejects = sample_build.out.parent / "rejects.jsonl"
    argv = [str(sample_build.out), "--out", str(out), "--rejects", str(rejects)]
    proc = subprocess.run(
        [str(EPISODES), "report", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000
    assert str(out) in proc.stdout and proc.stderr == ""
