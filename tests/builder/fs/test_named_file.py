"""A file the user names is replaced whole, unless it is a device or a pipe, which is
written into as it is (``builder.fs.named_file``); the rejects file and ``export-jsonl
--out`` go through it."""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import replace
from pathlib import Path

from builder.fs.named_file import replaced, streamed
from builder.ingest.rejects import RejectsWriter
from builder.validate.reject import FieldError, Reject
from schemas.vocabulary import INVALID_JSON


def _drained(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader of ``fifo``, as a shell's ``cat`` of it would be."""
    got: list[bytes] = []

    def read() -> None:
        with fifo.open("rb") as f:
            got.append(f.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


def test_which_files_are_streamed(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(fifo)
    assert streamed(fifo) and streamed(tmp_path / "link")
    assert not streamed(tmp_path / "file") and not streamed(tmp_path)
    assert not streamed(tmp_path / "not-there")


def test_a_link_is_kept_and_the_file_it_names_replaced(tmp_path: Path) -> None:
    (tmp_path / "real.jsonl").write_text("old")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "real.jsonl")
    assert replaced(tmp_path / "link.jsonl") == tmp_path / "real.jsonl"
    assert replaced(tmp_path / "real.jsonl") == tmp_path / "real.jsonl"


def _reject() -> Reject:
    return Reject("in.jsonl", 3, INVALID_JSON, (FieldError("$", "not JSON"),), b"{")


def test_rejects_into_a_pipe_reach_its_reader_and_leave_it_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "rejects.fifo"
    os.mkfifo(fifo)
    reader, got = _drained(fifo)
    writer = RejectsWriter(fifo)
    writer.add(_reject())
    writer.close()
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    assert got[0].count(b"\n") == 1 and b'"invalid_json"' in got[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rejects.fifo"]  # no partial


def test_rejects_through_a_link_replace_the_file_it_names(tmp_path: Path) -> None:
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "rejects.jsonl").write_text("an older build's\n")
    link = tmp_path / "rejects.jsonl"
    link.symlink_to(tmp_path / "kept" / "rejects.jsonl")
    writer = RejectsWriter(link)
    writer.add(_reject())
    writer.close()
    assert link.is_symlink()
    assert b'"invalid_json"' in (tmp_path / "kept" / "rejects.jsonl").read_bytes()


def test_a_refused_build_keeps_its_rejects_beside_the_file_a_link_names(tmp_path: Path) -> None:
    """The rejects file linked onto another folder: the rejects of a build the data refuses
    go beside the linked file (and the refusal says where), never across the link."""
    import pytest

    from builder.config import BuildConfig
    from builder.pipeline import BuildFailed, build

    data = Path(__file__).resolve().parents[3] / "data"
    (tmp_path / "kept").mkdir()
    link = tmp_path / "rejects.jsonl"
    link.symlink_to(tmp_path / "kept" / "rejects.jsonl")
    good = BuildConfig(episodes=(str(data / "episodes" / "episodes.jsonl"),), out=tmp_path / "ds")
    build(replace(good, rejects=link))  # a build in place: a refused one keeps it whole
    bad = replace(good, episodes=(str(data / "bad" / "bad_lines.jsonl"),), rejects=link)
    with pytest.raises(BuildFailed) as refused:
        build(bad)
    kept = tmp_path / "kept" / "rejects.refused.jsonl"
    assert str(kept) in str(refused.value)
    assert link.is_symlink() and kept.read_text().count("\n") > 0
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [
        "rejects.jsonl",
        "rejects.refused.jsonl",
    ]
