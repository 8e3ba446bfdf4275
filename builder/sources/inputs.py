"""Input files: glob expansion, transparent decompression, numbered lines, digests.

Lines are read as bytes with a hard size cap, so one hostile line of hundreds of megabytes is
reported, not loaded. Every input's sha256 (of the bytes as stored) and line count go into the
manifest, so a build can be traced to the exact files it read.
"""

from __future__ import annotations

import errno
import glob
import gzip
import hashlib
import io
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from builder.errors import UsageError
from builder.fs import storage

BOM = b"\xef\xbb\xbf"


class InputError(UsageError, ValueError):
    """An input that cannot be read at all (missing file, unknown compression)."""


def cannot_open(path: str, exc: OSError) -> InputError:
    """An input the system will not open (missing, no permission): the input's error, said
    the same wherever it is opened (read, or hashed by the cache)."""
    return InputError(f"{path}: cannot open: {exc.strerror or exc}")


@dataclass(frozen=True, slots=True)
class SourceLine:
    path: str
    number: int  # 1-based
    raw: bytes  # without the line terminator; a prefix when too_long
    too_long: bool = False
    # A record of a JSON document: its place in the document (1-based), which tells apart
    # records that start on one line (a list written on a single line); 0 for a JSONL line.
    item: int = 0

    @property
    def place(self) -> tuple[str, int, int]:
        """Where the record is, unique in the input: what a repeated key's first occurrence
        is compared with."""
        return self.path, self.number, self.item


@dataclass
class InputStats:
    path: str
    sha256: str = ""
    bytes: int = 0
    lines: int = 0


def expand_inputs(patterns: tuple[str, ...] | list[str]) -> list[str]:
    """Sorted, de-duplicated paths (or object-store URIs, ``builder.fs.storage``): a file named
    twice (``in.jsonl`` and ``./in.jsonl``, or through a link) is read once, under its first
    name. Sorted across patterns, not only within each: ``*.jsonl *.jsonl.gz`` and the two the
    other way round read the same files in the same order (what comes first wins a repeated
    id). A pattern matching nothing is an error, not a silent no-op."""
    paths: list[str] = []
    seen: set[str] = set()
    for pattern in patterns:
        try:
            matches = _matches(pattern)
        except storage.UnknownStorage as exc:
            error = InputError(str(exc))
            error.hint = exc.hint  # which stores there are, not "check the command line"
            raise error from exc
        if not matches:
            if not storage.is_uri(pattern):
                _refuse_not_a_file(pattern)
            raise InputError(f"{pattern}: no input file matches")
        for match in matches:
            key = match if storage.is_uri(match) else os.path.realpath(match)
            if key not in seen:
                seen.add(key)
                paths.append(match)
    return sorted(paths)


def _refuse_not_a_file(name: str) -> None:
    """What a local name that matches no file is instead, when it is something."""
    path = Path(name)
    try:
        path.lstat()
    except OSError as exc:  # nothing there, or a name no file can have
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(f"{name[:80]}…: {exc.strerror}") from exc
        if exc.errno == errno.EACCES:  # a folder on the way that may not be read
            raise InputError(f"{name}: {exc.strerror} (a folder on its path)") from exc
        return
    if path.is_dir():
        raise InputError(f"{name} is a folder: name its files, e.g. {name}/*.jsonl")
    if path.exists():  # a pipe (``<(zcat x.gz)``), a socket or a device
        error = InputError(
            f"{name} is not a regular file (a pipe?): write it to a file first, or name a "
            ".gz or .zst file itself (read as it is decompressed)"
        )
        error.hint = ""
        raise error
    if path.is_symlink():
        try:
            os.stat(name)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(f"{name} is a loop of symbolic links") from exc
        raise InputError(f"{name} is a broken symbolic link (to {os.readlink(name)})")


def _matches(pattern: str) -> list[str]:
    magic = glob.has_magic(pattern)
    if storage.is_uri(pattern):
        return storage.glob(pattern) if magic else [p for p in [pattern] if storage.is_file(p)]
    if magic and _is_file(pattern):  # a file whose name has [ ] * or ?, named as is
        return [pattern]
    matches = sorted(glob.glob(pattern, recursive=True)) if magic else [pattern]
    return [m for m in matches if _is_file(m)]


def _is_file(name: str) -> bool:
    """A file's name, as ``Path.is_file`` says; a name no file can have (a part longer than
    the system allows) names none rather than raising."""
    try:
        return Path(name).is_file()
    except OSError:
        return False


class _DigestingReader(io.RawIOBase):
    """Counts and hashes the stored bytes as a decompressor pulls them."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.sha256 = hashlib.sha256()
        self.bytes = 0
        self.frames: _ZstdFrames | None = None  # set for .zst inputs

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self._seen(data)
        return n

    def _seen(self, data: bytes) -> None:
        self.sha256.update(data)
        self.bytes += len(data)
        if self.frames is not None:
            self.frames.feed(data)

    def drain(self) -> None:
        """Read (and hash) whatever the decompressor left, then check the input is whole."""
        while data := self._raw.read(1 << 20):
            self._seen(data)
        if self.frames is not None and not self.frames.at_boundary:
            raise EOFError("compressed file ended before the end of a zstd frame")


_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE = 0x184D2A50  # ..0x184D2A5F
_FCS_BYTES = (0, 2, 4, 8)  # by Frame_Content_Size_flag (0 means 1 byte when single-segment)
_DICT_ID_BYTES = (0, 1, 2, 4)


class _ZstdFrames:
    """Follows zstd frame and block headers (RFC 8878) over the stored bytes, without
    decompressing, to tell whether the input ends at the end of a frame.

    ``zstandard``'s stream reader takes input that stops inside a frame for a shorter file, so
    a truncated ``.zst`` would silently lose its tail; with this, it is an error like a
    truncated ``.gz``. Malformed headers are left to the decompressor to report.
    """

    def __init__(self) -> None:
        self._state = "magic"  # which header the next bytes belong to
        self._header = bytearray()
        self._skip = 0  # payload bytes to pass over before ``_state``
        self._checksum = False

    @property
    def at_boundary(self) -> bool:
        return self._state in {"magic", "invalid"} and not self._header and not self._skip

    def feed(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end and self._state != "invalid":
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            need = {"magic": 4, "descriptor": 1, "skippable": 4, "block": 3}[self._state]
            take = min(need - len(self._header), end - pos)
            self._header += data[pos : pos + take]
            pos += take
            if len(self._header) == need:
                header = int.from_bytes(self._header, "little")
                self._header.clear()
                self._advance(header)

    def _advance(self, header: int) -> None:
        state = self._state
        if state == "magic":
            if header == _ZSTD_MAGIC:
                self._state = "descriptor"
            elif header & 0xFFFFFFF0 == _ZSTD_SKIPPABLE:
                self._state = "skippable"
            else:
                self._state = "invalid"
        elif state == "skippable":
            self._skip, self._state = header, "magic"
        elif state == "descriptor":
            single_segment = bool(header >> 5 & 1)
            fcs = _FCS_BYTES[header >> 6] or int(single_segment)
            self._checksum = bool(header >> 2 & 1)
            self._skip = (not single_segment) + _DICT_ID_BYTES[header & 3] + fcs
            self._state = "block"
        elif state == "block":
            last, kind, size = header & 1, header >> 1 & 3, header >> 3
            self._skip = 1 if kind == 1 else size  # an RLE block stores one byte
            if last:
                self._skip += 4 * self._checksum
                self._state = "magic"


def _open_decompressed(path: str, digest: _DigestingReader) -> BinaryIO:
    buffered = io.BufferedReader(digest, buffer_size=1 << 20)
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    if path.endswith(".zst"):
        digest.frames = _ZstdFrames()
        reader = zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)
        return io.BufferedReader(reader)  # type: ignore[arg-type]
    if path.endswith((".jsonl", ".json", ".ndjson")):
        _refuse_disguised(path, buffered.peek(6)[:6])
        return buffered
    raise InputError(
        f"{path}: unknown input format (expected .jsonl, .json or .ndjson, optionally .gz or .zst)"
    )


# What the first bytes of a file named as plain text say it is instead, and what to do.
_DISGUISED = (
    (re.compile(b"\\x1f\\x8b"), "gzip-compressed", "name it {path}.gz"),
    # a frame, or a skippable frame (0x184D2A5?) first
    (
        re.compile(b"(\\x28\\xb5\\x2f\\xfd|[\\x50-\\x5f]\\x2a\\x4d\\x18)"),
        "zstd-compressed",
        "name it {path}.zst",
    ),
    # UTF-16 (what PowerShell's > writes): ASCII, such as "{", takes a zero byte beside it
    (
        re.compile(
            b"\\xff\\xfe[^\\x00]\\x00|[^\\x00]\\x00[^\\x00]\\x00"  # little-endian
            b"|\\xfe\\xff\\x00[^\\x00]|\\x00[^\\x00]\\x00[^\\x00]"  # big-endian
        ),
        "UTF-16 text",
        "save it as UTF-8",
    ),
)


def _refuse_disguised(path: str, head: bytes) -> None:
    for magic, what, fix in _DISGUISED:
        if magic.match(head):
            error = InputError(f"{path}: the file is {what}: {fix.format(path=path)}")
            error.hint = ""  # the message says what to do
            raise error


class InputFile:
    """One input file; ``stats`` is complete once ``lines()`` has been read to its end."""

    def __init__(self, path: str, max_line_bytes: int, name: str | None = None) -> None:
        self.path = path
        # what its lines and stats call it: its path, or the name a restored input had
        self.name = path if name is None else name
        self.max_line_bytes = max_line_bytes
        self.stats = InputStats(self.name)

    def lines(self, on_bytes: Callable[[int], None] | None = None) -> Iterator[SourceLine]:
        """Yield every line. Its terminator (one LF or CRLF) and a UTF-8 BOM that starts it
        are stripped (a ``cat`` of files saved with one has one on each file's first line).

        A line longer than ``max_line_bytes`` is yielded as a short prefix with
        ``too_long=True`` and its rest skipped in chunks, so memory stays bounded.
        """
        path, limit = self.path, self.max_line_bytes
        try:
            handle = storage.open_input(path)
        except storage.StorageError:
            raise  # the store is out of reach: the environment's to fix, not the input's
        except storage.UnknownStorage as exc:
            error = InputError(str(exc))
            error.hint = exc.hint  # which stores there are, not "check the command line"
            raise error from exc
        except OSError as exc:
            raise cannot_open(path, exc) from exc
        digest = _DigestingReader(handle)
        reported = 0
        number = 0
        try:
            stream = _open_decompressed(path, digest)
            # the limit is the record's: its terminator (LF or CRLF) and a BOM do not count
            while line := stream.readline(limit + 2 + len(BOM)):
                number += 1
                whole = line.endswith(b"\n")
                bom = len(BOM) if line.startswith(BOM) else 0  # a file's, or each of a ``cat``'s
                # one terminator (LF, CRLF, a CR that ends the file): ``\r\r\n`` keeps a CR
                end = len(line) - whole
                body = line[: end - line.endswith(b"\r", 0, end)]
                too_long = len(body) - bom > limit
                if too_long and not whole:
                    _skip_rest_of_line(stream, limit)
                if bom or too_long:
                    body = body[bom : bom + 256] if too_long else body[bom:]
                yield SourceLine(self.name, number, body, too_long)
                if on_bytes is not None and digest.bytes != reported:
                    on_bytes(digest.bytes - reported)
                    reported = digest.bytes
            digest.drain()
        except (gzip.BadGzipFile, EOFError, zstandard.ZstdError) as exc:
            raise InputError(f"{path}: cannot read (corrupt or truncated?): {exc}") from exc
        except OSError as exc:
            if storage.is_uri(path):  # a read from a store fails when the store does
                raise storage.StorageError(f"{path}: cannot read: {exc}") from exc
            raise InputError(f"{path}: cannot read (corrupt or truncated?): {exc}") from exc
        finally:
            handle.close()
        if on_bytes is not None and digest.bytes != reported:
            on_bytes(digest.bytes - reported)
        self.stats = InputStats(self.name, digest.sha256.hexdigest(), digest.bytes, number)


def _skip_rest_of_line(stream: BinaryIO, chunk: int) -> None:
    while part := stream.readline(chunk):
        if part.endswith(b"\n"):
            return
