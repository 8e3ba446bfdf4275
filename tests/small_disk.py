"""A small disk for the full-disk tests: a tmpfs of a few MB, mounted for one test.

Mounting needs root (or CAP_SYS_ADMIN) and a kernel that allows it here; where it cannot be
done the test is skipped and says why, as it cannot run without a disk to fill.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(folder: Path, megabytes: int, inodes: int | None = None) -> Iterator[Path]:
    """``inodes``: at most this many files and folders on it (a disk that runs out of
    inodes with bytes to spare)."""
    folder.mkdir(parents=True, exist_ok=True)
    options = f"size={megabytes}m" + (f",nr_inodes={inodes}" if inodes else "")
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mount.returncode != 0:
        reason = (mount.stderr or mount.stdout).strip() or f"exit {mount.returncode}"
        pytest.skip(f"cannot mount a {megabytes} MB tmpfs to fill here: {reason}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """A file that leaves about ``leave`` bytes free on ``disk``."""
    import shutil

    filler = disk / "filler"
    size = max(0, shutil.disk_usage(disk).free - leave)
    with open(filler, "wb") as out:
        out.truncate(0)
        chunk = b"\0" * (1 << 16)
        while size > 0:
            size -= out.write(chunk[: min(len(chunk), size)])
    return filler
