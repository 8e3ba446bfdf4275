"""The rejects file: every record that did not make it into the tables, with its reason.

One JSON object per line (``Reject.to_json``), written to a temporary file and moved into
place when closed, so a crashed build never leaves half a rejects file behind. A build that
stops before it is done (an unreachable database, an interrupt, a bug) discards its partial
file and any folder it made for it: the rejects file in place stays the one of the build in
place. A build the data refused keeps its rejects, which say why: where the build tells
``close`` (beside the rejects file of a build it leaves in place, ``builder.pipeline``).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path
from typing import IO, TextIO

import orjson

from builder.fs.durable import sync_file, sync_folder
from builder.fs.leftovers import dead_partials
from builder.fs.named_file import replaced, streamed
from builder.validate.reject import Reject
from schemas.stages import Rejected


def remove_stale_partials(path: Path) -> None:
    """The partial rejects files beside ``path`` of processes that no longer run (a build
    killed outright leaves its own behind)."""
    for stale in dead_partials(path.parent, path.name):
        stale.unlink(missing_ok=True)


class RejectsWriter:
    def __init__(self, path: Path | None, echo: TextIO | None = None) -> None:
        self.path = path
        self.echo = echo
        self.by_kind: Counter[str] = Counter()
        self._tmp: Path | None = None
        self._handle: IO[bytes] | None = None
        self._captured: list[tuple[str, bytes]] | None = None
        self._made: list[Path] = []  # folders made for the file, innermost first
        self._digest = hashlib.sha256()  # of every byte written: the manifest records it
        if path is not None and streamed(path):  # /dev/null, a pipe: written as it comes
            self._handle = open(path, "wb")  # noqa: SIM115 - closed in close()
        elif path is not None:
            path = replaced(path)  # a link's file, the link kept
            # per process: two builds that share a rejects file never write one partial file
            self._tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
            folder = self._tmp.parent.absolute()
            while not folder.exists():
                self._made.append(folder)
                folder = folder.parent
            self._tmp.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_partials(path)
            self._handle = open(self._tmp, "wb")  # noqa: SIM115 - closed in close()

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def summary(self) -> Rejected:
        """What was rejected so far, as the value the later stages read."""
        return Rejected.of(self.by_kind, self.sha256 if self.path is not None else "")

    def add(self, reject: Reject) -> None:
        self.by_kind[reject.kind] += 1
        if self.echo is not None:
            print(reject, file=self.echo)
        line = orjson.dumps(reject.to_json()) + b"\n"
        if self._handle is not None:
            self._handle.write(line)
            self._digest.update(line)
        if self._captured is not None:
            self._captured.append((reject.kind, line))

    def capture(self) -> None:
        """Keep a copy of the rejects added from now on (``captured``): a reused segment
        (``builder.cache.segments``) writes its rejects again without reading its input."""
        self._captured = []

    def captured(self) -> list[tuple[str, bytes]]:
        """(kind, JSON line) of every reject since ``capture``; stops capturing."""
        out, self._captured = self._captured or [], None
        return out

    def add_lines(self, lines: list[tuple[str, bytes]]) -> None:
        """Rejects as ``captured`` returned them, written again."""
        for kind, line in lines:
            self.by_kind[kind] += 1
            if self.echo is not None:
                record = orjson.loads(line)
                where = record["source_file"]
                where += "" if record["line"] is None else f":{record['line']}"
                where += f" [{record['key']}]" if "key" in record else ""
                print(f"{where}: {kind}: {record['message']}", file=self.echo)
            if self._handle is not None:
                self._handle.write(line)
                self._digest.update(line)

    @property
    def sha256(self) -> str:
        """sha256 of the file as written so far (the whole file, once no reject follows)."""
        return self._digest.hexdigest()

    def __enter__(self) -> RejectsWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.close(keep=kind is None)  # moved into place whole, or not at all

    def close(self, keep: bool = True, to: Path | None = None) -> None:
        """Move the file into place (at ``to``, a path in the same folder, when given), or
        (``keep=False``) remove it and the folders made for it."""
        if self._handle is not None and self._tmp is None:  # a device or a pipe
            self._handle.close()
            self._handle = None
        if self._handle is None or self._tmp is None or self.path is None:
            return
        handle, self._handle = self._handle, None
        try:
            handle.close()  # its last bytes written: the disk may be full now
            if keep:
                sync_file(self._tmp)  # on disk before it is moved into place
                target = replaced(to or self.path)
                self._tmp.replace(target)
                sync_folder(target.parent)
                return
        except OSError as exc:
            self._tmp.unlink(missing_ok=True)  # never half a rejects file in place
            raise OSError(exc.errno, exc.strerror, str(to or self.path)) from exc
        self._tmp.unlink(missing_ok=True)
        for folder in self._made:
            try:
                folder.rmdir()
            except OSError:  # something else was written there since: not ours to remove
                break
