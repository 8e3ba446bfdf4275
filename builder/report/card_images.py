"""The dataset card's charts: the funnel, row lengths and rejects as small PNG files in
``images/``, written by the build beside the data and listed in the manifest's ``files`` with
their sha256 (so ``publish`` and ``upload_to`` send them and the release gate verifies them).

Drawn from the manifest being written and the build's own Parquet files, with the report's
chart code, so the card and the report agree. The bytes depend on nothing but those numbers
and the matplotlib version: a rebuild of the same inputs writes the same images. With a
build cache, each image is reused while the numbers it shows are unchanged (an unchanged
chart imports no matplotlib).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from builder.report import lengths, stats
from builder.report.folder import BuildFolder

FOLDER = "images"
CHARTS = {
    "funnel": "From episode lines to training rows",
    "lengths": "Characters per row, per training config",
    "rejects": "Rejects and failed checks, by kind",
}


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


def draw_chart(name: str, data: Mapping[str, Any]) -> bytes:
    """PNG bytes of card chart ``name`` (``data``: ``chart_numbers`` and ``lengths``)."""
    from builder.report import charts

    if name == "funnel":
        figure = charts.bars(
            CHARTS[name], data["funnel"], "episodes / rows", highlight=data["funnel_rows"]
        )
    elif name == "rejects":
        figure = charts.bars(CHARTS[name], data["rejects"], "lines / episodes")
    else:
        marks = {
            f"{limit // 1024}k tokens (est.)": limit * lengths.CHARS_PER_TOKEN
            for limit in lengths.CONTEXT_LIMITS
        }
        figure = charts.lengths(CHARTS[name], data["lengths"], "characters (log)", marks)
    return charts.to_png(figure, dpi=80)


# What each chart is drawn from: its image is reused while these are unchanged.
SHOWN = {"funnel": ("funnel", "funnel_rows"), "rejects": ("rejects",), "lengths": ("lengths",)}


def _memo_key(name: str, data: Mapping[str, Any]) -> str:
    import importlib.metadata

    code = b"".join(
        (Path(__file__).parent / f).read_bytes() for f in ("card_images.py", "charts.py")
    )
    shown: dict[str, Any] = {field: data[field] for field in SHOWN[name]}
    if name == "lengths":  # one number per row of every config: by digest
        shown["lengths"] = {
            config: hashlib.sha256(
                np.ascontiguousarray(values, dtype=np.int32).tobytes()
            ).hexdigest()
            for config, values in data["lengths"].items()
        }
    material = [
        name,
        shown,
        importlib.metadata.version("matplotlib"),
        hashlib.sha256(code).hexdigest(),
    ]
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _image(name: str, data: Mapping[str, Any], memo: Path | None, used: set[str]) -> bytes:
    """Chart ``name``'s PNG: from ``memo`` when it was drawn from the same numbers."""
    if memo is None:
        return draw_chart(name, data)
    stored = memo / f"{_memo_key(name, data)}-{name}.png"
    used.add(stored.name)
    if stored.is_file():
        return stored.read_bytes()
    png = draw_chart(name, data)
    memo.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(png)
    return png


def write_card_images(
    folder: Path, manifest: dict[str, Any], memo: Path | None = None
) -> dict[str, str]:
    """Write ``images/*.png`` into ``folder``; return ``{path: sha256}`` for the manifest.
    ``memo``: a folder keeping the images by what they show, and each data file's row
    lengths (``lengths.of_build``). The lengths are counted on other threads (Parquet and
    Polars, outside the GIL) while the funnel and rejects charts are drawn."""
    build = BuildFolder(folder, manifest=manifest)
    used: set[str] = set()
    with ThreadPoolExecutor(1, thread_name_prefix="card-lengths") as pool:
        counting = pool.submit(
            lengths.of_build, build, None, memo / "lengths" if memo is not None else None
        )
        data = chart_numbers(build, manifest)
        images = {name: _image(name, data, memo, used) for name in ("funnel", "rejects")}
        data["lengths"] = counting.result().chars
    images["lengths"] = _image("lengths", data, memo, used)
    if memo is not None:
        for old in memo.glob("*.png"):
            if old.name not in used:
                old.unlink()
    (folder / FOLDER).mkdir(exist_ok=True)
    listed = {}
    for name in CHARTS:
        relative = f"{FOLDER}/{name}.png"
        (folder / relative).write_bytes(images[name])
        listed[relative] = hashlib.sha256(images[name]).hexdigest()
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
