"""The stat memo (``index.json``): an input's digest known without reading the input.

It remembers, per path, the file's (device, inode, size, mtime_ns, ctime_ns) and the sha256
computed while it was last read (an object-store input, ``builder.fs.storage.Stat``: its size
and mtime; objects are replaced whole). A file whose stat is unchanged is trusted to have
that digest and is not read at all, unless it was *racy* when recorded: its mtime or ctime
was less than ``RACY_NS`` (2 s, the coarsest common file-system timestamp granularity)
before the moment we stat'ed it, in which case a later write in the same timestamp tick
could leave the stat unchanged (git's "racy clean" rule). ctime cannot be set from user
space, so resetting the mtime after an edit (``touch -d``, ``rsync -t``) still changes the
stat. A file that is not trusted is hashed first (one sequential read, no parsing) *only
if* its size equals the size recorded for that path — the only case in which its entry can
still be valid; any other file is a miss for sure and is normalized directly, its digest
computed while reading as always. So a new or grown file is read once, an unchanged file
zero times (or once, hashing only, when racy), and ``cache_verify = true`` hashes every file
regardless of the memo.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from builder.cache import keys
from builder.fs import storage

FORMAT = 1
RACY_NS = 2_000_000_000
_STAT_FIELDS = ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")


def _stat_key(st: storage.Stat) -> list[int]:
    return [getattr(st, name) for name in _STAT_FIELDS]


class StatMemo:
    """The last build's records (read from ``path``) and this build's (saved by ``save``:
    only the files this build read or trusted)."""

    def __init__(self, path: Path, verify: bool) -> None:
        self.path, self.verify = path, verify
        self.records: dict[str, dict[str, Any]] = {}
        self._old = self._load()

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            index = json.loads(self.path.read_text())
            if index.get("format") == FORMAT and isinstance(index.get("files"), dict):
                return index["files"]
        except (OSError, ValueError, AttributeError):
            pass
        return {}

    def known_digest(self, path: str, st: storage.Stat) -> tuple[str | None, bool]:
        """(the file's sha256 when it can be known cheaply, else None: a certain miss;
        whether it came from the memo without reading the file)."""
        record = self._old.get(path)
        if not isinstance(record, dict):
            return None, False
        try:
            same = record["stat"] == _stat_key(st)
            racy = max(st.st_mtime_ns, st.st_ctime_ns) + RACY_NS >= record["recorded_ns"]
            if same and not racy and not self.verify:
                return str(record["sha256"]), True
            if record["stat"][2] != st.st_size:
                return None, False  # another size: other content, so no entry can match
        except (KeyError, IndexError, TypeError):
            return None, False
        return keys.input_sha256(path), False

    def remember(self, path: str, before: storage.Stat, sha256: str, recorded_ns: int) -> None:
        """Record the file's digest, unless it changed while it was read."""
        try:
            after = storage.stat(path)
        except OSError:
            return
        if _stat_key(after) == _stat_key(before):
            self.records[path] = {
                "stat": _stat_key(before),
                "sha256": sha256,
                "recorded_ns": recorded_ns,
            }

    def keep(self, path: str) -> None:
        """Carry a trusted record over to the next build."""
        self.records[path] = self._old[path]

    def save(self) -> None:
        index = {"format": FORMAT, "files": self.records}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(index, indent=1, sort_keys=True))
        tmp.replace(self.path)
