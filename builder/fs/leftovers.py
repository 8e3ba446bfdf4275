"""What a build killed outright (SIGKILL, an abort, a power loss) leaves beside its output
folder, found and removed by the next command that touches the folder, or by ``episodes
doctor``.

A build that stops by itself removes its own work files; one that is killed cannot. Beside
``NAME`` it may leave ``.NAME.work`` (the staged build, as large as a build), ``.NAME.lock``,
``.NAME.old`` (the previous build, between the two renames of a swap where the OS has no
atomic exchange), ``.NAME.from.PID`` (the inputs ``build --from`` wrote back from a build's
tables, before it takes the lock) and ``.REJECTS.PID.partial`` (its partial rejects file);
a publish killed outright, ``.NAME.release.PID.XXXXXXXX`` (the copy it staged the release in).
None is removed while a build holds the folder's lock: they are that build's.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

from builder.fs.output import BuildLocked, output_lock, recover_interrupted_swap
from builder.fs.space import folder_size, megabytes

# ``.{rejects file name}.{pid}.partial`` (``builder.ingest.rejects``); a rejects file not
# named is taken to be a ``.jsonl`` one, so another program's partial files are left alone
_PARTIAL = r"^\.{name}\.(?P<pid>\d+)\.partial$"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dead_partials(folder: Path, rejects: str | None = None) -> list[Path]:
    """The partial rejects files in ``folder`` of processes that no longer run: of the
    rejects file named ``rejects``, or of any ``.jsonl`` one."""
    name = re.escape(rejects) if rejects else r".+\.jsonl"
    return _of_dead_processes(folder, re.compile(_PARTIAL.format(name=name)))


def restored_inputs(out: Path) -> Path:
    """Where ``build --from`` into ``out`` writes the inputs it restores: named by its
    process, which holds no lock yet, so only a dead one's folder is a leftover."""
    return out.parent / f".{out.name}.from.{os.getpid()}"


def staged_release(name: str) -> re.Pattern[str]:
    """The name of the copy ``publish`` stages a release in, beside the build ``name``
    (``builder.publish.release.stage``): ``.NAME.release.PID.XXXXXXXX``."""
    return re.compile(rf"^\.{re.escape(name)}\.release\.(?P<pid>\d+)\.\w+$")


def _of_dead_processes(folder: Path, pattern: re.Pattern[str]) -> list[Path]:
    """The entries of ``folder`` whose name ``pattern`` matches with the ``pid`` of a
    process that no longer runs."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        match = pattern.match(name)
        if match and int(match["pid"]) != os.getpid() and not process_alive(int(match["pid"])):
            found.append(folder / name)
    return found


def find(out: Path, rejects: Path | None = None) -> list[Path]:
    """The leftovers of killed builds into ``out`` (and with the rejects file ``rejects``);
    the caller holds the folder's lock, so none is a running build's."""
    parent = out.parent
    found = [parent / f".{out.name}.{kind}" for kind in ("work", "old")]
    found = [p for p in found if p.exists() or p.is_symlink()]
    if (parent / f".{out.name}.old") in found and not out.exists():
        found.remove(parent / f".{out.name}.old")  # the previous build itself: put back
    restored = re.compile(rf"^\.{re.escape(out.name)}\.from\.(?P<pid>\d+)$")
    found += _of_dead_processes(parent, restored)
    found += _of_dead_processes(parent, staged_release(out.name))
    found += dead_partials(parent)
    if rejects is not None:
        found += [p for p in dead_partials(rejects.parent, rejects.name) if p not in found]
    return found


def remove(out: Path, rejects: Path | None = None) -> list[tuple[Path, int]]:
    """Remove the leftovers of killed builds into ``out`` (and put back a previous build a
    swap left aside), unless a build into ``out`` runs: then nothing is touched. Returns
    each removed path with the bytes it freed. Beside a folder on a read-only mount no lock
    can be taken, and nothing is there to remove: nothing is tried."""
    if not out.parent.is_dir():
        return []
    lock = out.parent / f".{out.name}.lock"
    stale_lock = lock.exists()
    removed = []
    try:
        with output_lock(out):  # the lock file goes when it is released
            for path in find(out, rejects):
                size = folder_size(path) if path.is_dir() else path.lstat().st_size
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                if not path.exists():
                    removed.append((path, size))
            recover_interrupted_swap(out)
    except BuildLocked:
        return []
    except OSError as exc:  # beside a folder no one may write, nothing can be left to remove
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and not stale_lock:
            return []
        raise
    if stale_lock and not lock.exists():
        removed.append((lock, 0))
    return removed


def said(removed: list[tuple[Path, int]]) -> str:
    """One line for what ``remove`` removed (empty when nothing)."""
    if not removed:
        return ""
    names = ", ".join(path.name for path, _ in removed)
    freed = sum(size for _, size in removed)
    return f"removed what an interrupted build left: {names} ({megabytes(freed)} freed)"
