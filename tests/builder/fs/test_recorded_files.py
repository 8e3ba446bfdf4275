"""A folder's files against those a manifest records (``builder.fs.recorded_files``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from builder.fs.recorded_files import CHANGED, MISSING, OUTSIDE, UNRECORDED, differences


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_each_kind_of_difference_is_named(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "same.parquet").write_bytes(b"a")
    (tmp_path / "t" / "edited.parquet").write_bytes(b"b")
    (tmp_path / "t" / "new.parquet").write_bytes(b"c")
    recorded = {
        "t/same.parquet": _sha(b"a"),
        "t/edited.parquet": _sha(b"was"),
        "t/gone.parquet": _sha(b"d"),
        "../elsewhere.parquet": _sha(b"e"),
    }
    present = ["t/same.parquet", "t/edited.parquet", "t/new.parquet"]
    assert list(differences(tmp_path, recorded, present)) == [
        ("../elsewhere.parquet", OUTSIDE),
        ("t/edited.parquet", CHANGED),
        ("t/gone.parquet", MISSING),
        ("t/new.parquet", UNRECORDED),
    ]
    # without digests, an edited file is not read
    assert ("t/edited.parquet", CHANGED) not in differences(tmp_path, recorded, present, False)
