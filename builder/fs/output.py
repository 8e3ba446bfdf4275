"""The output folder: one build at a time (its lock), the staged folder swapped in atomically,
a swap interrupted by a crash repaired at the next start, and what a build there wrote
(its manifest)."""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from builder.errors import LockHeld
from builder.fs.durable import sync_folder, sync_tree
from schemas.manifest import BUILD_FILES, MANIFEST, Manifest, ManifestError, read_manifest


class BuildLocked(LockHeld, RuntimeError):
    """Another build into the same output folder is running."""


@contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """One build per output folder. The OS drops the lock when the process dies, even by
    SIGKILL, so a crashed build never blocks the next one. The lock file is removed when
    the build ends, so nothing is left beside the output."""
    out.parent.mkdir(parents=True, exist_ok=True)
    path = out.parent / f".{out.name}.lock"
    while True:
        handle = open(path, "a+")  # noqa: SIM115 - closed below
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise BuildLocked(
                f"another build into {out} is running — wait for it to finish, or build into "
                "another --out"
            ) from None
        # The holder before us may have removed the file between our open and our lock:
        # a lock on a removed file guards nothing, so take the one now at the path.
        try:
            same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        handle.close()
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # removed while still locked: no one else can hold it
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def build_manifest(folder: Path) -> Manifest | None:
    """The manifest of the build in ``folder``, or None when no build of this builder is
    there (a ``manifest.json`` of something else included)."""
    try:
        manifest = read_manifest(folder / MANIFEST)
    except ManifestError:
        return None
    return manifest if "builder_version" in manifest else None


def refused_rejects(rejects: Path) -> Path:
    """Where a refused build puts its rejects when the output folder holds a build: beside
    that build's rejects file, which stays the one ``episodes report`` reads with it."""
    return rejects.with_name(f"{rejects.stem}.refused{rejects.suffix}")


def foreign_files(folder: Path) -> Iterator[str]:
    """The files (and links) under ``folder`` that no build wrote: every one, unless a build's
    manifest is there; then those it does not list. An older builder's manifest lists none:
    its folder is taken as a build's whole. Lazily: ``--out ~`` is refused at its first file,
    not after a walk of the whole home folder."""
    manifest = build_manifest(folder)
    listed = manifest.get("files") if manifest is not None else {}
    if not isinstance(listed, dict):
        return
    ours = {*listed, *BUILD_FILES} if manifest is not None else set()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        for name in sorted([*files, *links]):
            rel = Path(root, name).relative_to(folder).as_posix()
            if rel not in ours:
                yield rel


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux ``renameat2(RENAME_EXCHANGE)``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) == 0
    except (OSError, AttributeError):
        return False


def swap(staged: Path, out: Path, on_disk: frozenset[Path] = frozenset()) -> None:
    """Put ``staged`` at ``out``. Readers see the old folder or the new one, never neither:
    an atomic exchange where the OS has one; elsewhere two renames, and a build killed
    between them is repaired by ``recover_interrupted_swap`` at the next start. The staged
    build is on disk before it is swapped in (``builder.fs.durable``; ``on_disk``: its files
    known to be there already), and so is the swap."""
    out.parent.mkdir(parents=True, exist_ok=True)
    sync_tree(staged, on_disk)
    old = out.parent / f".{out.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if out.exists() and exchange(staged, out):
        sync_folder(out.parent)
        shutil.rmtree(staged, ignore_errors=True)
        return
    if out.exists():
        out.rename(old)
    staged.rename(out)
    sync_folder(out.parent)
    shutil.rmtree(old, ignore_errors=True)


def recover_interrupted_swap(out: Path) -> None:
    old = out.parent / f".{out.name}.old"
    if old.exists() and not out.exists():
        old.rename(out)
