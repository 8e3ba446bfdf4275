"""The rejects file: every record that did not make it into the tables, with its reason.

One JSON object per line (``Reject.to_json``), written to a temporary file and moved into
place when closed, so a crashed build never leaves half a rejects file behind.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import IO, TextIO

import orjson

from builder.validate import Reject


class RejectsWriter:
    def __init__(self, path: Path | None, echo: TextIO | None = None) -> None:
        self.path = path
        self.echo = echo
        self.by_kind: Counter[str] = Counter()
        self._tmp = path.with_name(f".{path.name}.partial") if path else None
        self._handle: IO[bytes] | None = None
        if self._tmp is not None:
            self._tmp.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(self._tmp, "wb")  # noqa: SIM115 - closed in close()

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def add(self, reject: Reject) -> None:
        self.by_kind[reject.kind] += 1
        if self.echo is not None:
            print(reject, file=self.echo)
        if self._handle is not None:
            self._handle.write(orjson.dumps(reject.to_json()) + b"\n")

    def close(self) -> None:
        if self._handle is None or self._tmp is None or self.path is None:
            return
        self._handle.close()
        self._handle = None
        self._tmp.replace(self.path)
