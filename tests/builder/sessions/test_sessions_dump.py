"""A SQL dump is loaded into a database in the temporary folder: a full temporary folder is
said as such (exit 5, naming it), and a dump a killed process left there goes with the next
one that loads a dump."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.errors import EnvironmentProblem
from builder.sessions.dump import DUMP_PREFIX, clear_stale_dumps, load_dump
from tests.small_disk import small_disk

ROOT = Path(__file__).resolve().parents[3]


def test_a_full_temporary_folder_is_said_as_one(tmp_path: Path) -> None:
    dump = tmp_path / "big.sql"
    rows = ",".join(f"({i}, '{'x' * 200}')" for i in range(20_000))
    dump.write_text(f"CREATE TABLE t (i INTEGER, s TEXT);\nINSERT INTO t VALUES {rows};\n")
    with small_disk(tmp_path / "disk", 1) as disk, pytest.raises(EnvironmentProblem) as raised:
        load_dump(dump, disk / "loaded.db")
    message = str(raised.value)
    assert message.startswith(f"no space left on the device of {disk} loading the SQL dump")
    assert "TMPDIR" in raised.value.hint and raised.value.exit_code == 5


def test_a_temporary_folder_out_of_inodes_is_said_as_one(tmp_path: Path) -> None:
    """Bytes to spare, and no inode for the loaded database beside the one file made there:
    SQLite's "unable to open database file" blamed the dump (exit 1); it is the disk's."""
    dump = tmp_path / "small.sql"
    dump.write_text("CREATE TABLE t (i INTEGER);\nINSERT INTO t VALUES (1);\n")
    with small_disk(tmp_path / "disk", 50, inodes=2) as disk:
        (disk / "taken").write_text("the one inode left beside the folder's own")
        with pytest.raises(EnvironmentProblem) as raised:
            load_dump(dump, disk / "loaded.db")
    message = str(raised.value)
    assert message.startswith(f"no inodes left on the device of {disk} loading the SQL dump")
    assert "TMPDIR" in raised.value.hint and raised.value.exit_code == 5


def test_a_killed_loaders_dump_goes_with_the_next_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(gone.stdout)
    stale = tmp_path / f"{DUMP_PREFIX}{dead}-abc"
    mine = tmp_path / f"{DUMP_PREFIX}{os.getpid()}-def"
    other = tmp_path / "sessions-dump-unrelated"
    for folder in (stale, mine, other):
        folder.mkdir()
        (folder / "loaded.db").write_bytes(b"x")
    assert clear_stale_dumps() == [stale]
    assert not stale.exists() and mine.exists() and other.exists()
