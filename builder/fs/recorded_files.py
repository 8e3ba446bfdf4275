"""A build folder's files against the ones its manifest records (``files``: path -> sha256):
the one comparison behind the publish gate and the restore's reading of a build's tables."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from builder.fs.storage import file_sha256

MISSING = "missing"  # recorded, not there
CHANGED = "changed"  # there, but not the bytes recorded
UNRECORDED = "unrecorded"  # there, not recorded
OUTSIDE = "outside"  # recorded with a path that leaves the folder


def differences(
    folder: Path, recorded: Mapping[str, str], present: Iterable[str], digests: bool = True
) -> Iterator[tuple[str, str]]:
    """``(path, what)`` for each recorded file that is outside ``folder``, missing or (with
    ``digests``) changed, in path order, then each file of ``present`` (paths relative to
    ``folder``) that is not recorded."""
    for rel, expected in sorted(recorded.items()):
        path = folder / rel
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            yield rel, OUTSIDE
        elif not path.is_file():
            yield rel, MISSING
        elif digests and file_sha256(path) != expected:
            yield rel, CHANGED
    for rel in sorted(set(present) - set(recorded)):
        yield rel, UNRECORDED
