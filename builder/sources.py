"""Input files: glob expansion, transparent decompression, numbered lines, digests.

Lines are read as bytes with a hard size cap, so one hostile line of hundreds of megabytes is
reported, not loaded. Every input's sha256 (of the bytes as stored) and line count go into the
manifest, so a build can be traced to the exact files it read.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BOM = b"\xef\xbb\xbf"


class InputError(ValueError):
    """An input that cannot be read at all (missing file, unknown compression)."""


@dataclass(frozen=True, slots=True)
class SourceLine:
    path: str
    number: int  # 1-based
    raw: bytes  # without the line terminator; a prefix when too_long
    too_long: bool = False


@dataclass
class InputStats:
    path: str
    sha256: str = ""
    bytes: int = 0
    lines: int = 0


def expand_inputs(patterns: tuple[str, ...] | list[str]) -> list[str]:
    """Sorted, de-duplicated paths; a pattern matching nothing is an error, not a silent no-op."""
    paths: list[str] = []
    for pattern in patterns:
        magic = glob.has_magic(pattern)
        matches = sorted(glob.glob(pattern, recursive=True)) if magic else [pattern]
        matches = [m for m in matches if Path(m).is_file()]
        if not matches:
            raise InputError(f"{pattern}: no input file matches")
        paths.extend(m for m in matches if m not in paths)
    return paths


class _DigestingReader(io.RawIOBase):
    """Counts and hashes the stored bytes as a decompressor pulls them."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.sha256.update(data)
        self.bytes += n
        return n

    def drain(self) -> None:
        while self._raw.read(1 << 20):
            pass


def _open_decompressed(path: str, digest: _DigestingReader) -> BinaryIO:
    buffered = io.BufferedReader(digest, buffer_size=1 << 20)
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    if path.endswith(".zst"):
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(buffered))
    if path.endswith((".jsonl", ".json", ".ndjson")):
        return buffered
    raise InputError(f"{path}: unknown input format (expected .jsonl, .jsonl.gz or .jsonl.zst)")


class InputFile:
    """One input file; ``stats`` is complete once ``lines()`` has been read to its end."""

    def __init__(self, path: str, max_line_bytes: int) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.stats = InputStats(path)

    def lines(self, on_bytes: Callable[[int], None] | None = None) -> Iterator[SourceLine]:
        """Yield every line. Terminators (LF, CRLF) and a leading UTF-8 BOM are stripped.

        A line longer than ``max_line_bytes`` is yielded as a short prefix with
        ``too_long=True`` and its rest skipped in chunks, so memory stays bounded.
        """
        path, limit = self.path, self.max_line_bytes
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed in finally, generator-scoped
        except OSError as exc:
            raise InputError(f"{path}: cannot open: {exc.strerror}") from exc
        digest = _DigestingReader(handle)
        reported = 0
        number = 0
        try:
            stream = _open_decompressed(path, digest)
            while line := stream.readline(limit + 1):
                number += 1
                too_long = len(line) > limit and not line.endswith(b"\n")
                if too_long:
                    _skip_rest_of_line(stream, limit)
                    line = line[:256]
                elif number == 1 and line.startswith(BOM):
                    line = line[len(BOM) :]
                yield SourceLine(path, number, line.rstrip(b"\r\n"), too_long)
                if on_bytes is not None and digest.bytes != reported:
                    on_bytes(digest.bytes - reported)
                    reported = digest.bytes
            digest.drain()
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: cannot read (corrupt or truncated?): {exc}") from exc
        finally:
            handle.close()
        if on_bytes is not None and digest.bytes != reported:
            on_bytes(digest.bytes - reported)
        self.stats = InputStats(path, digest.sha256.hexdigest(), digest.bytes, number)


def _skip_rest_of_line(stream: BinaryIO, chunk: int) -> None:
    while part := stream.readline(chunk):
        if part.endswith(b"\n"):
            return
