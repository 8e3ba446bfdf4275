"""Writing generated records as JSON lines, plain or compressed (``.gz``, ``.zst``), with
bytes that depend only on the content."""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import orjson


@contextmanager
def _open_out(path: Path) -> Iterator[BinaryIO]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw:
        if path.suffix == ".gz":
            # mtime=0 and no file name keep the bytes a function of the content alone.
            with gzip.GzipFile("", "wb", compresslevel=6, fileobj=raw, mtime=0) as gz:
                yield gz  # type: ignore[misc]
        elif path.suffix == ".zst":
            import zstandard

            with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as zw:
                yield zw  # type: ignore[misc]
        else:
            yield raw


def write_jsonl(path: str | Path, records: Iterable[Any]) -> int:
    """Write one JSON line per record (``bytes`` are written as they are); compressed by
    ``.gz`` / ``.zst`` suffix. Returns the number of lines."""
    count = 0
    buffer = bytearray()
    with _open_out(Path(path)) as out:
        for record in records:
            buffer += record if isinstance(record, bytes) else orjson.dumps(record)
            buffer += b"\n"
            count += 1
            if len(buffer) >= 1 << 20:
                out.write(buffer)
                buffer.clear()
        out.write(buffer)
    return count
