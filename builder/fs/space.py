"""A full disk: said before the build starts when the space is plainly short, and in one
line naming the folder and the space needed when it fills on the way.

The estimates are rough on purpose. The staged build lives beside the previous one until
the swap, so a rebuild needs at least the previous build's size again (scaled by how its
input grew); a first build, about ``FINAL_PER_INPUT_BYTE`` of its input. While it runs,
the work folder peaks at about ``PEAK_PER_INPUT_BYTE`` of the input (the staged tables,
the buckets and the dataset together, sampled every 0.05 s: 0.53 of the sample's episodes
and 1.90 of the benchmark's 5,000 long ones, counted in bytes; a filesystem that rounds
each of the many small files up to a block, tmpfs, needs more).
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from builder.errors import EnvironmentProblem
from schemas.manifest import MANIFEST, ManifestError, read_manifest

FULL = (errno.ENOSPC, errno.EDQUOT)
FINAL_PER_INPUT_BYTE = 0.15
PEAK_PER_INPUT_BYTE = 2.0
MB = 1 << 20


class DiskFull(EnvironmentProblem, OSError):
    """A folder the command writes to is on a device without the space it needs."""

    def __init__(
        self, folder: Path, needed: int, free: int, ran_out: bool = False, files: int | None = None
    ) -> None:
        self.hint = "free space there, or choose another folder, and run it again"
        if ran_out and out_of_inodes(folder, needed, free, files):
            text = (
                f"the device of {folder} ran out of inodes during the build: no more files can "
                f"be made there ({files if files is not None else 'few'} were free, with "
                f"{megabytes(free)})"
            )
            self.hint = (
                "remove files there, or choose another folder (a file system with more "
                "inodes), and run it again"
            )
        elif ran_out:  # ``free`` was there when it started, and it was not enough
            more = f", about {megabytes(needed)}" if needed > free else ""
            text = (
                f"the device of {folder} filled up during the build: it needs more than the "
                f"{megabytes(free)} that were free{more}"
            )
        else:
            text = (
                f"no space left on the device of {folder}: {megabytes(free)} free, the build "
                f"needs about {megabytes(needed)} there"
            )
        super().__init__(text)
        self.folder, self.needed, self.free = folder, needed, free


def megabytes(size: int) -> str:
    return f"{size / MB:.1f} MB"


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FULL


def free_bytes(folder: Path) -> int:
    """Free bytes an unprivileged writer may use on ``folder``'s device (its nearest
    existing ancestor when it does not exist yet)."""
    return shutil.disk_usage(_existing(folder)).free


def free_files(folder: Path) -> int | None:
    """Inodes an unprivileged writer may still use on ``folder``'s device; None where the
    file system counts none (it makes them as it needs) or cannot say."""
    try:
        stats = os.statvfs(_existing(folder))
    except OSError:
        return None
    return stats.f_favail if stats.f_files else None


# Fewer free inodes than this at the start, and bytes enough: a full disk is one of files.
FEW_FILES = 10_000


def out_of_inodes(folder: Path, needed: int, free: int, files: int | None) -> bool:
    """Whether a full disk (ENOSPC, said of bytes and inodes alike) was one of inodes: none
    free now, or few at the start (``files``) with the bytes the build was estimated to need
    (``needed`` of ``free``). Asked once the build's files are removed, so the start counts."""
    if free_files(folder) == 0:
        return True
    return files is not None and files < FEW_FILES and needed < free


def _existing(folder: Path) -> Path:
    probe = folder.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def folder_size(folder: Path) -> int:
    """Bytes of the regular files under ``folder`` (hard links counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def input_bytes(paths: Iterable[str]) -> int:
    """The local inputs' size (an object store's inputs are not fetched to count them)."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except (OSError, ValueError):
            continue
    return total


def final_size(out: Path, inputs: int) -> int:
    """The finished build's size: the previous build's, scaled by how the input grew, or a
    share of the input when there is no previous build to go by."""
    try:
        listed = read_manifest(out / MANIFEST).get("inputs", [])
        before = sum(int(i.get("bytes", 0)) for i in listed if isinstance(i, dict))
    except (ManifestError, TypeError, ValueError, AttributeError):
        before = 0
    if before > 0 and inputs > 0:
        return int(folder_size(out) * inputs / before)
    return int(inputs * FINAL_PER_INPUT_BYTE)


def check_room(out: Path, inputs: int) -> None:
    """Refuse before any work when ``out``'s device cannot hold even the finished build."""
    needed = final_size(out, inputs)
    free = free_bytes(out.parent)
    if needed > free:
        raise DiskFull(out.parent, needed, free)


def disk_full(
    exc: BaseException,
    free: dict[Path, int],
    needed: dict[Path, int],
    files: dict[Path, int | None] | None = None,
) -> DiskFull:
    """``exc`` (a write that found the disk full) as one line: the folder whose device holds
    the file that failed, or else the one with the least room; ``free``: each folder the
    command writes to, with the bytes free there before it started; ``needed``: the bytes
    it was estimated to need there (0: no estimate); ``files``: the inodes free there
    before it started (``free_files``)."""
    candidates = list(free)
    # a copy that failed names its source first and its target second: the target filled up
    for failed in (getattr(exc, "filename2", None), getattr(exc, "filename", None)):
        if not failed:
            continue
        path = Path(failed).absolute()
        match = [f for f in candidates if path.is_relative_to(f.absolute())]
        if match:
            candidates = match
            break
    folder = min(candidates, key=free_bytes)
    started = (files or {}).get(folder)
    return DiskFull(folder, needed.get(folder, 0), free[folder], ran_out=True, files=started)
