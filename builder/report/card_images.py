"""The dataset card's charts: the funnel, row lengths and rejects as small PNG files in
``images/``, written by the build beside the data and listed in the manifest's ``files`` with
their sha256 (so ``publish`` and ``upload_to`` send them and the release gate verifies them).

Drawn from the manifest being written and the build's own Parquet files, with the report's
chart code, so the card and the report agree. The bytes depend on nothing but those numbers
and the matplotlib version: a rebuild of the same inputs writes the same images. With a
build cache, images drawn before are reused by the numbers they show (no matplotlib import).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
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


def chart_data(folder: Path, manifest: dict[str, Any], memo: Path | None = None) -> dict[str, Any]:
    """What each card chart shows: plain numbers, the key of the image memo. ``memo``: a
    folder keeping each data file's row lengths (``lengths.of_build``)."""
    build = BuildFolder(folder, manifest=manifest)
    steps = stats.funnel(manifest, stats.verified_counts(build))
    found = lengths.of_build(build, memo=memo)
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
        "lengths": found.chars,
        "rejects": {**rejects, **failed} or {"(none)": 0},
    }


def draw(data: Mapping[str, Any]) -> dict[str, bytes]:
    """PNG bytes of each card chart."""
    from builder.report import charts

    marks = {
        f"{limit // 1024}k tokens (est.)": limit * lengths.CHARS_PER_TOKEN
        for limit in lengths.CONTEXT_LIMITS
    }
    figures = {
        "funnel": charts.bars(
            CHARTS["funnel"], data["funnel"], "episodes / rows", highlight=data["funnel_rows"]
        ),
        "lengths": charts.lengths(CHARTS["lengths"], data["lengths"], "characters (log)", marks),
        "rejects": charts.bars(CHARTS["rejects"], data["rejects"], "lines / episodes"),
    }
    return {name: charts.to_png(fig, dpi=80) for name, fig in figures.items()}


def _memo_key(data: Mapping[str, Any]) -> str:
    import importlib.metadata

    code = b"".join(
        (Path(__file__).parent / name).read_bytes() for name in ("card_images.py", "charts.py")
    )
    # Row lengths enter the key by digest: one number per row of every config.
    shown = {
        **data,
        "lengths": {
            name: hashlib.sha256(np.ascontiguousarray(values, dtype=np.int32).tobytes()).hexdigest()
            for name, values in data["lengths"].items()
        },
    }
    material = [shown, importlib.metadata.version("matplotlib"), hashlib.sha256(code).hexdigest()]
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def write_card_images(
    folder: Path, manifest: dict[str, Any], memo: Path | None = None
) -> dict[str, str]:
    """Write ``images/*.png`` into ``folder``; return ``{path: sha256}`` for the manifest.
    ``memo``: a folder keeping the last images by what they show."""
    data = chart_data(folder, manifest, memo / "lengths" if memo is not None else None)
    images: dict[str, bytes] | None = None
    key = _memo_key(data) if memo is not None else ""
    if memo is not None:
        stored = {name: memo / f"{key}-{name}.png" for name in CHARTS}
        if all(p.is_file() for p in stored.values()):
            images = {name: p.read_bytes() for name, p in stored.items()}
    if images is None:
        images = draw(data)
        if memo is not None:
            memo.mkdir(parents=True, exist_ok=True)
            for old in memo.glob("*.png"):
                old.unlink()
            for name, png in images.items():
                (memo / f"{key}-{name}.png").write_bytes(png)
    (folder / FOLDER).mkdir(exist_ok=True)
    listed = {}
    for name, png in images.items():
        relative = f"{FOLDER}/{name}.png"
        (folder / relative).write_bytes(png)
        listed[relative] = hashlib.sha256(png).hexdigest()
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
