"""A build folder's tables are read only when they are the files its manifest lists, and a
listed file that is no Parquet is a damaged build said in one line, not an internal error."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from builder.cli.episodes import main

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("command", ["export-jsonl", "build"])
def test_a_listed_file_that_is_no_parquet_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    source = tmp_path / "ds"
    argv = ["build", "--config", "/dev/null", "--no-progress", "--max-reject-ratio", "1"]
    episodes = str(ROOT / "data" / "episodes" / "episodes.jsonl")
    assert main([*argv, "--episodes", episodes, "--out", str(source)]) == 0
    victim = sorted((source / "hooks").glob("*.parquet"))[0]
    damaged = victim.read_bytes()[: victim.stat().st_size // 2]
    victim.chmod(0o644)
    victim.write_bytes(damaged)
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["files"][f"hooks/{victim.name}"] = hashlib.sha256(damaged).hexdigest()
    (source / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    if command == "export-jsonl":
        code = main(["export-jsonl", str(source), "--out", str(tmp_path / "x.jsonl")])
    else:
        again = ["build", "--from", str(source), "--out", str(tmp_path / "b"), "--no-progress"]
        code = main([*again, "--rejects", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert f"hooks/{victim.name}: cannot be read as Parquet" in err[0]
    assert not (tmp_path / "b").exists()
    shutil.rmtree(source)


def test_export_jsonl_into_the_build_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file the manifest does not list: publish would refuse the folder afterwards."""
    source = tmp_path / "ds"
    argv = ["build", "--config", "/dev/null", "--no-progress", "--max-reject-ratio", "1"]
    episodes = str(ROOT / "data" / "episodes" / "episodes.jsonl")
    assert main([*argv, "--episodes", episodes, "--out", str(source)]) == 0
    capsys.readouterr()
    assert main(["export-jsonl", str(source), "--out", str(source / "episodes.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is inside the build folder" in err[0], err
    assert not (source / "episodes.jsonl").exists()


def test_sessions_written_back_onto_a_full_disk_are_one_line_and_leave_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.small_disk import fill, small_disk

    source = tmp_path / "ds"
    argv = ["build", "--config", str(ROOT / "dataset.toml"), "--no-progress"]
    assert main([*argv, "--out", str(source), "--rejects", str(tmp_path / "r.jsonl")]) == 0
    for room in (0, 64 << 10):  # full at once; full while the rows are written
        with small_disk(tmp_path / f"disk{room}", 1) as disk:
            fill(disk, room)
            capsys.readouterr()
            url = f"sqlite:///{disk / 's.db'}"
            out = str(tmp_path / "e.jsonl")
            assert main(["export-jsonl", str(source), "--sessions-db", url, "--out", out]) == 5
            err = capsys.readouterr().err.strip().splitlines()
            assert sorted(p.name for p in disk.iterdir()) == ["filler"]
            assert len(err) == 1 and "no space left" in err[0], err


def test_a_build_on_a_read_only_disk_is_read(tmp_path: Path) -> None:
    """Reading a build takes no lock where none can be made: ``export-jsonl`` and
    ``report`` read a folder on a read-only mount."""
    import subprocess

    from tests.small_disk import small_disk

    with small_disk(tmp_path / "disk", 8) as disk:
        source = disk / "ds"
        argv = ["build", "--config", "/dev/null", "--no-progress", "--max-reject-ratio", "1"]
        episodes = str(ROOT / "data" / "episodes" / "episodes.jsonl")
        assert main([*argv, "--episodes", episodes, "--out", str(source)]) == 0
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        out = tmp_path / "e.jsonl"
        assert main(["export-jsonl", str(source), "--out", str(out)]) == 0
        assert len(out.read_text().splitlines()) > 0
        page = tmp_path / "r.html"
        assert main(["report", str(source), "--out", str(page)]) == 0
        assert page.stat().st_size > 0
