"""A SQLite dump (``sqlite:///sessions.sql``) loaded into a database file of its own in the
temporary folder, which the readers then connect to (``builder.sessions.db.connect``)."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from builder.engine.interrupts import STOPPING
from builder.engine.orphans import alive
from builder.errors import EnvironmentProblem
from builder.fs.space import free_files
from builder.sessions.urls import DatabaseError

_PG_DUMP_MARKS = ("-- PostgreSQL database dump", "\\connect ", "\\restrict ", "FROM stdin;")

PROGRESS_STEPS = 100_000


def _in_place(elsewhere: list[str], action: int, name: str | None, *_: object) -> int:
    """SQLite's authorizer while a dump loads: ``ATTACH`` (and ``VACUUM INTO``, which
    attaches its target) would read or write a file outside the temporary database."""
    if action == sqlite3.SQLITE_ATTACH:
        elsewhere.append(str(name))
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


@contextmanager
def _signals_heard() -> Iterator[list[int]]:
    """A long statement (a dump's ``WITH RECURSIVE``, a huge insert) runs inside SQLite,
    where the command's handlers of Ctrl-C and SIGTERM cannot raise. Meanwhile (on the main
    thread) those signals are only noted, so the progress handler can stop the statement;
    once it has stopped, a noted signal is raised again for the command's own handler."""
    heard: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield heard
        return
    previous = {s: signal.signal(s, lambda signum, _: heard.append(signum)) for s in STOPPING}
    try:
        yield heard
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if heard:
            signal.raise_signal(heard[0])  # the command's handler raises it, as it would have


def load_dump(dump: Path, target: Path) -> None:
    """Execute the SQL dump ``dump`` into a new SQLite database file ``target``."""
    try:
        script = dump.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatabaseError(f"{dump}: cannot read SQL dump: {exc}") from exc
    if "\x00" in script:  # SQLite reads a statement only up to it
        at = script.index("\x00")
        line = script.count("\n", 0, at) + 1
        raise DatabaseError(f"{dump}: a NUL character at line {line}: not an SQL dump")
    try:
        con = sqlite3.connect(target)
    except sqlite3.Error as exc:
        raise _out_of_inodes(target, dump) or DatabaseError(
            f"{dump}: SQL dump does not load into SQLite: {exc}"
        ) from exc
    elsewhere: list[str] = []
    con.set_authorizer(functools.partial(_in_place, elsewhere))
    try:
        with _signals_heard() as heard:
            con.set_progress_handler(lambda: bool(heard), PROGRESS_STEPS)
            try:
                con.executescript(script)
                con.commit()
            except sqlite3.OperationalError:
                if heard:  # stopped for Ctrl-C or SIGTERM: raised again on the way out
                    return
                raise
    except sqlite3.Error as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        no_inode = _out_of_inodes(target, dump) if code == sqlite3.SQLITE_CANTOPEN else None
        if no_inode is not None:  # its journal could not be made
            raise no_inode from exc
        if code == sqlite3.SQLITE_FULL:
            size = target.stat().st_size if target.exists() else 0
            full = EnvironmentProblem(
                f"no space left on the device of {target.parent} loading the SQL dump {dump} "
                f"into SQLite ({size / 1e6:.1f} MB written)"
            )
            full.hint = "free space there, or set TMPDIR to a folder on a larger disk"
            raise full from exc
        if elsewhere:
            raise DatabaseError(
                f"{dump}: the dump opens another file ({elsewhere[0]}): ATTACH and VACUUM "
                "INTO are refused, as a dump is read into a database of its own"
            ) from exc
        if any(mark in script for mark in _PG_DUMP_MARKS):
            raise DatabaseError(
                f"{dump}: not a SQLite dump: it looks like pg_dump output, which SQLite cannot "
                f"load ({exc})",
                f"load it into PostgreSQL (psql -d DBNAME -f {dump}) and pass "
                "--sessions postgresql://user@host/DBNAME",
            ) from exc
        raise DatabaseError(f"{dump}: SQL dump does not load into SQLite: {exc}") from exc
    finally:
        con.close()


def _out_of_inodes(target: Path, dump: Path) -> EnvironmentProblem | None:
    """The error of a database SQLite could not open (or journal) for want of an inode: a
    file system with bytes to spare and no file left to make. None when inodes remain."""
    if free_files(target.parent) != 0:
        return None
    full = EnvironmentProblem(
        f"no inodes left on the device of {target.parent} loading the SQL dump {dump} into "
        "SQLite: no more files can be made there"
    )
    full.hint = "remove files there, or set TMPDIR to a folder on another disk"
    return full


DUMP_PREFIX = "sessions-dump-"  # + the loading process's id: a killed one's is found again


def clear_stale_dumps() -> list[Path]:
    """Remove the loaded dumps of processes that are gone (killed while they read one: the
    database may take gigabytes of the temporary folder); the folders removed."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{DUMP_PREFIX}*-*"):
        pid = folder.name.removeprefix(DUMP_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@contextmanager
def loaded_dump(dump: Path) -> Iterator[Path]:
    """``dump`` loaded into a database in the temporary folder, removed on the way out (and,
    should this process be killed, by the next load: ``clear_stale_dumps``)."""
    clear_stale_dumps()
    with tempfile.TemporaryDirectory(prefix=f"{DUMP_PREFIX}{os.getpid()}-") as folder:
        loaded = Path(folder) / "loaded.db"
        load_dump(dump, loaded)
        yield loaded
