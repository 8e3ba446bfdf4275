"""The dataset card's charts: the funnel, row lengths and rejects as small PNG files in
``images/``, written by the build beside the data and listed in the manifest's ``files`` with
their sha256 (so ``publish`` and ``upload_to`` send them and the release gate verifies them).

Drawn from the manifest being written and the build's own Parquet files, the numbers the
report shows (``card_charts``, drawn with Pillow: ≈ 0.05 CPU-s for the three). The bytes
depend on nothing but those numbers, Pillow and the fonts: a rebuild of the same inputs
writes the same images. With a build cache, each image is reused while the numbers it shows
are unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import threading
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from builder.report import card_charts, card_png, lengths, stats
from builder.report.folder import BuildFolder

FOLDER = "images"
CHARTS = card_charts.CHARTS


def chart_numbers(build: BuildFolder, manifest: dict[str, Any]) -> dict[str, Any]:
    """What the funnel and rejects charts show: plain numbers, from the manifest (and the
    episodes' verified flags)."""
    steps = stats.funnel(manifest, stats.verified_counts(build))
    failed = {
        f"check: {k}": int(v)
        for part in ("episodes_by_kind", "questions_by_kind")
        for k, v in (manifest["checks"].get(part) or {}).items()
        if v
    }
    rejects = {k: int(v) for k, v in manifest["rejects"]["by_kind"].items() if v}
    return {
        "funnel": {s.label: s.count for s in steps},
        "funnel_rows": [s.label for s in steps if s.key.startswith("rows.")],
        "rejects": {**rejects, **failed},  # none: the chart says so
    }


# What each chart is drawn from: its image is reused while these are unchanged.
SHOWN = {"funnel": ("funnel", "funnel_rows"), "rejects": ("rejects",), "lengths": ("lengths",)}
# The code that draws them: a change draws every chart again.
DRAWING_CODE = ("card_charts.py", "card_png.py", "context_limits.py")


@functools.cache
def _drawing() -> str:
    """The code that draws the charts and what it draws with (``card_png.renderer``)."""
    code = b"".join((Path(__file__).parent / f).read_bytes() for f in DRAWING_CODE)
    return f"{hashlib.sha256(code).hexdigest()}, {card_png.renderer()}"


def _memo_key(name: str, data: Mapping[str, Any]) -> str:
    shown: dict[str, Any] = {field: data[field] for field in SHOWN[name]}
    if name == "lengths":  # one number per row of every config: by digest
        shown["lengths"] = {
            config: hashlib.sha256(
                np.ascontiguousarray(values, dtype=np.int32).tobytes()
            ).hexdigest()
            for config, values in data["lengths"].items()
        }
    material = [name, shown, _drawing()]
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


class _Images:
    """The charts, each taken from ``memo`` instead of drawn when it was drawn from the same
    numbers; new drawings are stored there."""

    def __init__(self, memo: Path | None) -> None:
        self.memo = memo
        self.used: set[str] = set()

    def png(self, name: str, data: Mapping[str, Any]) -> bytes:
        if self.memo is None:
            return card_charts.draw_chart(name, data)
        store = self.memo / f"{_memo_key(name, data)}-{name}.png"
        self.used.add(store.name)
        kept = _intact_png(store)
        if kept is not None:
            return kept
        png = card_charts.draw_chart(name, data)
        # whole or not at all: a build stopped mid-write leaves none
        store.parent.mkdir(parents=True, exist_ok=True)
        partial = store.with_name(f".{store.name}.{os.getpid()}.{threading.get_ident()}")
        partial.write_bytes(png)
        partial.replace(store)
        return png


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _intact_png(path: Path) -> bytes | None:
    """The PNG at ``path`` when every chunk's CRC holds and it ends with ``IEND``; None when
    it is missing or damaged (cut short, overwritten), so it is drawn again."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    at = len(_PNG_SIGNATURE)
    if not data.startswith(_PNG_SIGNATURE):
        return None
    while at + 12 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        body = data[at + 4 : at + 8 + length]  # chunk type and data
        if len(body) != 4 + length or at + 12 + length > len(data):
            return None
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        if zlib.crc32(body) != crc:
            return None
        at += 12 + length
        if body[:4] == b"IEND":
            return data if at == len(data) else None
    return None


def write_card_images(
    folder: Path,
    manifest: dict[str, Any],
    memo: Path | None = None,
    row_chars: Mapping[str, np.ndarray] | None = None,
) -> dict[str, str]:
    """Write ``images/*.png`` into ``folder``; return ``{path: sha256}`` for the manifest.
    ``memo``: a folder keeping the images by what they show, and each data file's row
    lengths (``lengths.of_build``). ``row_chars``: data files' characters per row counted as
    the build wrote them (the others are read). The lengths are counted on another thread
    (Parquet and Polars, outside the GIL) while the funnel and rejects charts are drawn."""
    build = BuildFolder(folder, manifest=manifest)
    images = _Images(memo)
    with ThreadPoolExecutor(1, thread_name_prefix="card-lengths") as pool:
        counting = pool.submit(
            lengths.of_build,
            build,
            None,
            memo / "lengths" if memo is not None else None,
            row_chars,
        )
        data = chart_numbers(build, manifest)
        drawings = {name: images.png(name, data) for name in ("funnel", "rejects")}
        data["lengths"] = counting.result().chars
    drawings["lengths"] = images.png("lengths", data)
    if memo is not None:
        for old in memo.glob("*.png"):
            if old.name not in images.used:
                old.unlink()
    (folder / FOLDER).mkdir(exist_ok=True)
    listed = {}
    for name in CHARTS:
        relative = f"{FOLDER}/{name}.png"
        (folder / relative).write_bytes(drawings[name])
        listed[relative] = hashlib.sha256(drawings[name]).hexdigest()
    return listed


def card_section(files: Mapping[str, str]) -> list[str]:
    """The card's markdown for the images the manifest lists (none: no section)."""
    shown = [(n, t) for n, t in CHARTS.items() if f"{FOLDER}/{n}.png" in files]
    if not shown:
        return []
    return [
        "## At a glance",
        "",
        *(f"![{title}]({FOLDER}/{name}.png)\n" for name, title in shown),
        "Lengths are characters of the text a trainer reads per row; the dashed lines mark "
        "4k, 8k and 32k tokens *estimated* at 4 characters per token. `episodes report` "
        "writes the full report of a build (HTML, offline).",
        "",
    ]
