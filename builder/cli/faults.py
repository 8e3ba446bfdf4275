"""Faults from outside the build, said in one line: a full disk, the leftovers of a build
killed outright, and ``episodes doctor``; and one said by nothing: the output's reader gone."""

from __future__ import annotations

import argparse
import errno
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from builder.config import BuildConfig
from builder.errors import LOCKED
from builder.fs import leftovers, space
from builder.fs.uris import is_uri


def clear_leftovers(command: str, out: Path, rejects: Path | None = None) -> None:
    """Remove what a killed build into ``out`` left, and say so in one line (stderr: the
    command's own output stays as it is)."""
    line = leftovers.said(leftovers.remove(out, rejects))
    if line:
        print(f"episodes {command}: {line}", file=sys.stderr)


def build_inputs_bytes(config: BuildConfig) -> int:
    from builder.sources.inputs import InputError, expand_inputs

    named = [*config.episodes, *config.synthetic_questions, *config.llm_questions]
    try:
        local = expand_inputs([p for p in named if not is_uri(p)])
    except InputError:
        return 0  # the build says what is wrong with them
    return space.input_bytes(local)


@contextmanager
def full_disk_said(config: BuildConfig) -> Iterator[None]:
    """Before the build: refuse at once when the output's device cannot hold even the
    finished build. During it: a write that finds the disk full becomes one line naming the
    folder and the space the build needs (its work files are removed on the way out, as
    for any failure)."""
    inputs = build_inputs_bytes(config)
    space.check_room(config.out, inputs)
    peak = max(space.final_size(config.out, inputs), int(inputs * space.PEAK_PER_INPUT_BYTE))
    needed = {config.rejects.parent: 0, config.out.parent: peak}  # rejects: no estimate
    if config.cache_dir is not None:
        needed[config.cache_dir] = peak  # the batches and the segments' files, as staged
    free = {folder: space.free_bytes(folder) for folder in needed}
    files = {folder: space.free_files(folder) for folder in needed}
    try:
        yield
    except OSError as exc:
        if not space.is_disk_full(exc) or isinstance(exc, space.DiskFull):
            raise
        raise space.disk_full(exc, free, needed, files) from exc


def add_timeout_option(parser: argparse.ArgumentParser, remote: str) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=f"how long {remote} may take to answer (default 30; EPISODES_TIMEOUT)",
    )


def set_timeout(seconds: float | None) -> None:
    """``--timeout`` for this process and the ones it starts; both network settings read
    now, so a bad ``EPISODES_TIMEOUT`` or ``EPISODES_RETRIES`` is one line before any work."""
    from builder.fs import network

    network.set_timeout(seconds)
    network.check()


# What the system says of a path the user named, not of the build: a name too long for it,
# a place the user may not write (``/sys``, a read-only mount, another user's folder), a file
# where the path needs a folder.
PATH_PROBLEMS = frozenset(
    {errno.ENAMETOOLONG, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR}
)


def path_problem_line(command: str, exc: BaseException) -> str:
    """The one line for such a path no command said more of (empty for any other error)."""
    if not isinstance(exc, OSError) or exc.errno not in PATH_PROBLEMS or not exc.filename:
        return ""
    hint = "choose another path, or make it writable, and run it again"
    why = exc.strerror
    if exc.errno == errno.ENOTDIR:
        why, hint = "a part of its path is a file, not a folder", "choose another path"
    return f"episodes {command}: cannot use {exc.filename}: {why} — {hint}"


def disk_failed_line(command: str, exc: BaseException) -> str:
    """The one line for a write or a flush the disk failed (EIO: a failing disk, a network
    file system gone away; empty for any other error)."""
    if not isinstance(exc, OSError) or exc.errno != errno.EIO:
        return ""
    where = f" {exc.filename}" if exc.filename else ""
    hint = "check the disk (the system log says more), then run it again"
    return f"episodes {command}: the disk failed to write{where}: {exc.strerror} — {hint}"


def disk_full_line(command: str, exc: BaseException) -> str:
    """The one line for a full disk no command said more of (empty for any other error)."""
    if not space.is_disk_full(exc):
        return ""
    where = f" writing {exc.filename}" if getattr(exc, "filename", None) else ""
    hint = "free space there and run it again"
    return f"episodes {command}: no space left on the device{where} — {hint}"


def add_doctor_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser(
        "doctor", help="find and remove what a build killed outright left beside its folder"
    )
    d.add_argument("build_dir", type=Path, metavar="DIR", help="the output folder (build/dataset)")
    d.add_argument("--rejects", type=Path, help="the build's rejects file, when not beside DIR")


def cmd_doctor(args: argparse.Namespace) -> int:
    """Name and remove the leftovers of killed builds into ``DIR``; a running build's files
    and the build in ``DIR`` itself are never touched."""
    out: Path = args.build_dir
    removed = leftovers.remove(out, args.rejects)
    if removed:
        print(leftovers.said(removed))
        for path, size in removed:
            print(f"  {path} ({space.megabytes(size)})")
    elif (out.parent / f".{out.name}.lock").exists():
        print(f"episodes doctor: a build into {out} is running: nothing removed", file=sys.stderr)
        return LOCKED
    else:
        print(f"nothing left behind beside {out}")
    return 0


def reader_gone() -> bool:
    """Whether stdout is a pipe its reader has closed (``episodes … | head``): the end the
    command writes to then reports an error condition."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no poll here; no file behind stdout
        return False
