"""``episodes doctor`` and the one line a full disk gives, whatever the command."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest

from builder.cli import episodes as cli
from builder.errors import LOCKED, UNAVAILABLE
from builder.fs.output import output_lock


def leave_a_killed_build(root: Path) -> None:
    (root / "ds").mkdir(parents=True)
    (root / ".ds.work" / "tables").mkdir(parents=True)
    (root / ".ds.work" / "tables" / "episodes.parquet").write_bytes(b"x" * (1 << 20))
    (root / ".ds.lock").write_text("")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (root / f".rejects.jsonl.{dead.pid}.partial").write_text("")


def test_doctor_names_and_removes_a_killed_builds_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leave_a_killed_build(tmp_path)
    partial = next(tmp_path.glob(".rejects.jsonl.*.partial")).name
    assert cli.main(["doctor", str(tmp_path / "ds")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"removed what an interrupted build left: .ds.work, {partial}, .ds.lock (1.0 MB freed)"
    )
    assert out[1:] == [
        f"  {tmp_path / name} ({size})"
        for name, size in ((".ds.work", "1.0 MB"), (partial, "0.0 MB"), (".ds.lock", "0.0 MB"))
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]
    assert cli.main(["doctor", str(tmp_path / "ds")]) == 0
    assert capsys.readouterr().out == f"nothing left behind beside {tmp_path / 'ds'}\n"


def test_doctor_leaves_a_running_build_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leave_a_killed_build(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with output_lock(tmp_path / "ds"):
        assert cli.main(["doctor", str(tmp_path / "ds")]) == LOCKED
        assert sorted(p.name for p in tmp_path.iterdir()) == before
    err = capsys.readouterr().err
    assert err == f"episodes doctor: a build into {tmp_path / 'ds'} is running: nothing removed\n"


def test_a_full_disk_no_command_says_more_of_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full(args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "/mnt/small/schema.json")

    monkeypatch.setitem(cli.COMMANDS, "schema", full)
    assert cli.main(["schema"]) == UNAVAILABLE
    assert capsys.readouterr().err == (
        "episodes schema: no space left on the device writing /mnt/small/schema.json — free "
        "space there and run it again\n"
    )


def test_validate_on_a_full_disk_leaves_no_half_rejects_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rejects file is written beside its place and moved there whole: a disk that fills
    while its last bytes go out leaves nothing, and the line names the file."""
    from builder.ingest import rejects as rejects_module

    def full(path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rejects_module, "sync_file", full)
    bad = Path(__file__).resolve().parents[3] / "data" / "bad" / "bad_lines.jsonl"
    out = tmp_path / "rejects.jsonl"
    assert cli.main(["validate", str(bad), "--rejects", str(out)]) == UNAVAILABLE
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        f"episodes validate: no space left on the device writing {out} — free space there and "
        "run it again"
    )
    assert list(tmp_path.iterdir()) == []
