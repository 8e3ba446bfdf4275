"""``episodes export-jsonl [DIR|ORG/NAME@VERSION] [--out FILE] [--sessions-db URL]``: the
inverse of a build (``builder.restore``), its sessions written through the sessions stage's
database access.

Errors are :class:`builder.errors.UserError` s (no build there, a build from before the
tables kept every field, an unwritable output: exit 1), printed in one line by
``builder.cli``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "export-jsonl",
        help="write a build's episodes back as JSON lines (and its sessions into a database)",
        description="Rebuilds, from a build folder's tables alone, one JSON line per accepted "
        "episode, in the layout it was captured in: the input line after redaction, but for "
        "the values the manifest names under not_round_tripped.",
    )
    p.add_argument(
        "build_dir",
        nargs="?",
        metavar="DIR|ORG/NAME@VERSION",
        help="build folder or a release on the Hub (default: [output] out, build/dataset)",
    )
    p.add_argument("--out", type=Path, metavar="FILE", help="default: standard output")
    p.add_argument(
        "--sessions-db",
        metavar="URL",
        help="also write the sessions and actions into this database (sqlite:///path.db or "
        "postgresql://…; its tables created where missing)",
    )
    p.add_argument("--config", type=Path, help="dataset.toml (default: ./dataset.toml if any)")
    return p


def run(args: argparse.Namespace) -> int:
    from builder.cli.faults import clear_leftovers
    from builder.config import find_config, load_config
    from builder.restore.episodes import episode_records, write_lines
    from builder.restore.folder import EPISODE_TABLES, SESSION_TABLES, build_folder, is_release

    spec = args.build_dir
    if spec is None:
        spec = str(load_config(find_config(args.config, Path.cwd())).out)
    if not is_release(spec):  # a killed build's files go before the folder is read
        clear_leftovers("export-jsonl", Path(spec))
    tables = EPISODE_TABLES + (SESSION_TABLES if args.sessions_db else ())
    folder = build_folder(spec, tables)
    if args.out is not None and args.out.resolve().is_relative_to(folder.resolve()):
        from builder.errors import UsageError

        error = UsageError(f"--out {args.out} is inside the build folder {folder}")
        error.hint = "write it beside the folder: publish refuses files its manifest does not list"
        raise error
    if args.sessions_db:
        n_sessions, n_actions = write_sessions(folder, args.sessions_db)
        print(f"{n_sessions} sessions, {n_actions} actions → {args.sessions_db}", file=sys.stderr)
    if args.out is None:
        n = write_lines(episode_records(folder), sys.stdout)
    else:
        n = _write_file(args.out, folder)
    print(f"{n} episodes → {args.out or 'standard output'}", file=sys.stderr)
    return 0


def write_sessions(folder: Path, url: str) -> tuple[int, int]:
    """The build's sessions and actions appended to the database at ``url`` (its tables
    created where missing)."""
    from builder.errors import UsageError, UserError
    from builder.restore.sessions import session_rows
    from builder.sessions.db import ingest, init_database
    from builder.sessions.urls import parse_url

    rows = session_rows(folder)
    if rows is None:
        raise UsageError(f"--sessions-db {url}: {folder} holds no sessions")
    sessions, actions = rows
    db = parse_url(url)
    made = db.dialect == "sqlite" and db.path is not None and not db.path.exists()
    try:
        init_database(url)
        ingest(url, [("sessions", sessions), ("actions", actions)])
    except UserError:
        if made:  # no half database left where none was
            for leftover in (db.path, db.path.with_name(db.path.name + "-journal")):
                leftover.unlink(missing_ok=True)
        raise
    return sessions.num_rows, actions.num_rows


# a full disk, a folder it may not write, a failing disk: exit 5 and what to do about it
ENVIRONMENT_ERRORS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO}
)


def _write_file(out: Path, folder: Path) -> int:
    """Written beside ``out`` and renamed over it: a failed export leaves no half file (a
    device or a pipe is written into as it is: ``builder.fs.named_file``)."""
    from builder.errors import UsageError
    from builder.fs.named_file import replaced, streamed
    from builder.restore.episodes import episode_records, write_lines

    if streamed(out):
        with out.open("w", encoding="utf-8") as f:
            return write_lines(episode_records(folder), f)
    out = replaced(out)
    part = out.with_name(out.name + ".part")
    try:
        with part.open("w", encoding="utf-8") as f:
            n = write_lines(episode_records(folder), f)
        part.replace(out)
    except OSError as exc:
        if exc.errno in ENVIRONMENT_ERRORS:  # the disk's or the folder's: said as for any command
            raise OSError(exc.errno, exc.strerror, str(out)) from exc
        raise UsageError(f"--out {out}: cannot write it ({exc.strerror})") from exc
    finally:
        with contextlib.suppress(OSError):  # none there, or no folder to hold one
            part.unlink(missing_ok=True)
    return n
