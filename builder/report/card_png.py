"""The dataset card's charts as PNG bytes, drawn with Pillow: labelled horizontal bars and
box plots of lengths on a log axis. The report's interactive page keeps matplotlib
(``charts``); three small images at the end of every build do not need its import and
layout engine, which took more CPU than the rest of the card.

Deterministic: the fonts are the DejaVu files matplotlib ships (found without importing
it), no text or time goes into the file, and every coordinate is computed from the numbers
alone, so the same numbers give the same bytes with the same Pillow.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from builder.errors import EnvironmentProblem
from builder.report.charts import ACCENT, COLOR, MUTED  # the report's colours (no matplotlib)

WIDTH = 640
PAD = 12
TITLE_SIZE, TEXT_SIZE, SMALL_SIZE = 14, 12, 10
BAR_ROW, BOX_ROW = 22, 30  # pixels per bar, per box
WHITE, INK, GRID = "#ffffff", "#1f2933", "#e4e7eb"
WHISKER = 1.5  # box plot whiskers: the furthest values within 1.5 × IQR of the box
LABEL_ROOM = WIDTH * 2 // 5  # pixels a row's label may take: the bars keep the rest


@functools.cache
def _font_file(bold: bool) -> Path:
    spec = importlib.util.find_spec("matplotlib")  # locates the package, runs none of it
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    if spec is not None and spec.origin is not None:
        path = Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf" / name
        if path.is_file():
            return path
    problem = EnvironmentProblem(f"the card's charts need matplotlib's font {name}")
    problem.hint = "pip install --force-reinstall matplotlib"
    raise problem


@functools.cache
def renderer() -> str:
    """What, besides the numbers and this code, decides an image's bytes: Pillow's version and
    the fonts' contents (read here rather than asked of package metadata, whose lookup scans
    every installed distribution: ≈ 10 ms a call)."""
    import hashlib

    import PIL  # the package's version only: not its imaging modules

    fonts = hashlib.sha256(b"".join(_font_file(b).read_bytes() for b in (False, True)))
    return f"pillow {PIL.__version__}, fonts {fonts.hexdigest()}"


@functools.cache
def font(size: int, bold: bool = False) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(str(_font_file(bold)), size)


class Canvas:
    """A white image and the drawing calls the charts use."""

    def __init__(self, width: int, height: int) -> None:
        from PIL import Image, ImageDraw

        self.image = Image.new("RGB", (width, height), WHITE)
        self.draw = ImageDraw.Draw(self.image)

    def text(self, xy: tuple[float, float], text: str, size: int = TEXT_SIZE, **kw: Any) -> None:
        fill = kw.pop("fill", INK)
        self.draw.text(xy, text, font=font(size, kw.pop("bold", False)), fill=fill, **kw)

    def vertical_text(self, x: float, y: float, text: str, size: int, fill: str) -> None:
        """``text`` read bottom to top, its top-left corner at (x, y)."""
        from PIL import Image, ImageDraw

        box = font(size).getbbox(text)
        label = Image.new("RGB", (box[2] + 2, box[3] + 2), WHITE)
        ImageDraw.Draw(label).text((0, 0), text, font=font(size), fill=fill)
        self.image.paste(label.transpose(Image.Transpose.ROTATE_90), (round(x), round(y)))

    def dashed(self, x: float, top: float, bottom: float, fill: str) -> None:
        y = top
        while y < bottom:
            self.draw.line([(x, y), (x, min(y + 4, bottom))], fill=fill)
            y += 7

    def png(self) -> bytes:
        out = io.BytesIO()
        self.image.save(out, format="PNG", compress_level=6)
        return out.getvalue()


def text_width(text: str, size: int = TEXT_SIZE) -> int:
    return math.ceil(font(size).getlength(text))


def fitted(text: str, room: int = LABEL_ROOM) -> str:
    """``text``, cut short with an ellipsis to fit ``room`` pixels."""
    if text_width(text) <= room:
        return text
    while text and text_width(text + "…") > room:
        text = text[:-1]
    return text + "…"


def compact(value: float) -> str:
    """A tick's label: ``950``, ``5k``, ``12.5k``, ``3M``."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def nice_ticks(top: float, most: int = 6) -> list[float]:
    """Ticks from 0 at a round step (1, 2, 2.5 or 5 × 10ⁿ), at most ``most`` of them past 0,
    the last at or beyond ``top``."""
    if top <= 0:
        return [0.0, 1.0]
    magnitude = 10 ** math.floor(math.log10(top / most))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if top / (m * magnitude) <= most)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def bars(
    title: str,
    values: Mapping[str, float],
    axis_label: str,
    highlight: Sequence[str] = (),
    fmt: str = "{:,.0f}",
) -> bytes:
    """Horizontal bars, top to bottom in ``values``' order, each labelled with its value;
    ``highlight``ed labels in the accent colour. No values: the chart says "none"."""
    if not values:
        canvas = Canvas(WIDTH, 64)
        canvas.text((PAD, PAD - 4), title, TITLE_SIZE, bold=True)
        canvas.text((PAD, PAD + 24), "none", fill=MUTED)
        return canvas.png()
    labels, numbers = list(values), [float(v) for v in values.values()]
    shown = [fitted(label) for label in labels]
    top_of_axis = nice_ticks(max(max(numbers), 0.0) or 1.0)
    left = PAD + max(text_width(label) for label in shown) + 8
    value_room = max(text_width(fmt.format(v), SMALL_SIZE) for v in numbers) + 8
    right = WIDTH - PAD - value_room
    top = PAD + 26
    bottom = top + BAR_ROW * len(labels)
    canvas = Canvas(WIDTH, bottom + 48)
    scale = (right - left) / top_of_axis[-1]
    _axis(canvas, top_of_axis, left, right, top, bottom, lambda v: left + v * scale)
    for row, (label, number) in enumerate(zip(labels, numbers, strict=True)):
        y = top + row * BAR_ROW
        fill = ACCENT if label in highlight else COLOR
        end = left + max(number, 0.0) * scale
        if end > left:
            canvas.draw.rectangle([left, y + 3, end, y + BAR_ROW - 3], fill=fill)
        canvas.text((left - 8, y + BAR_ROW / 2), shown[row], anchor="rm")
        canvas.text((end + 4, y + BAR_ROW / 2), fmt.format(number), SMALL_SIZE, anchor="lm")
    canvas.text((PAD, PAD - 4), title, TITLE_SIZE, bold=True)
    canvas.text(((left + right) / 2, bottom + 26), axis_label, SMALL_SIZE, anchor="mt")
    return canvas.png()


def _axis(
    canvas: Canvas,
    ticks: Sequence[float],
    left: float,
    right: float,
    top: float,
    bottom: float,
    at: Callable[[float], float],
    labels: Sequence[str] | None = None,
) -> None:
    """Vertical grid lines at ``ticks`` (x = ``at(tick)``), their labels under the axis."""
    for i, tick in enumerate(ticks):
        x = round(at(tick))
        canvas.draw.line([(x, top), (x, bottom)], fill=GRID)
        label = labels[i] if labels is not None else compact(tick)
        canvas.text((x, bottom + 5), label, SMALL_SIZE, anchor="mt")
    canvas.draw.line([(left, bottom), (round(max(right, at(ticks[-1]))), bottom)], fill=INK)
    canvas.draw.line([(left, top), (left, bottom)], fill=INK)


def box_stats(values: np.ndarray) -> tuple[float, float, float, float, float, np.ndarray]:
    """(low whisker, first quartile, median, third quartile, high whisker, outliers), the
    quartiles interpolated linearly, the whiskers at the furthest values within
    ``WHISKER`` × IQR of the box."""
    q1, median, q3 = (float(q) for q in np.percentile(values, [25, 50, 75]))
    reach = WHISKER * (q3 - q1)
    inside = values[(values >= q1 - reach) & (values <= q3 + reach)]
    low = float(inside.min()) if len(inside) else q1
    high = float(inside.max()) if len(inside) else q3
    return low, q1, median, q3, high, values[(values < low) | (values > high)]


def lengths(
    title: str, per_config: Mapping[str, Sequence[int]], axis_label: str, marks: Mapping[str, int]
) -> bytes:
    """A box plot of row lengths per config on a log axis, with dashed vertical lines at
    ``marks`` (label → value, e.g. context limits)."""
    names = [n for n, v in per_config.items() if len(v)] or ["(none)"]
    data = [np.maximum(np.asarray(per_config.get(n, [1]), dtype=np.float64), 1) for n in names]
    lowest = math.log10(min(float(d.min()) for d in data))
    highest = math.log10(max([float(d.max()) for d in data] + [float(v) for v in marks.values()]))
    margin = max(highest - lowest, 1.0) * 0.04  # a little room either side, as decades go
    first, last = lowest - margin, highest + margin
    left = PAD + max(text_width(fitted(name)) for name in names) + 8
    right = WIDTH - PAD - 8
    top, bottom = PAD + 26, PAD + 26 + BOX_ROW * len(names)
    canvas = Canvas(WIDTH, bottom + 48)
    span = (right - left) / (last - first)

    def at(value: float) -> float:
        return left + (math.log10(value) - first) * span

    decades = range(math.floor(first), math.ceil(last) + 1)
    for k in decades:  # minor ticks: 2 … 9 × 10ᵏ
        for x in (round(at(m * 10.0**k)) for m in range(2, 10)):
            if left <= x <= right:
                canvas.draw.line([(x, bottom), (x, bottom + 2)], fill=INK)
    powers = [10.0**k for k in decades if left <= at(10.0**k) <= right]
    _axis(canvas, powers, left, right, top, bottom, at, [compact(p) for p in powers])
    for label, value in marks.items():
        x = round(at(value))
        canvas.dashed(x, top, bottom, MUTED)
        canvas.vertical_text(x + 3, top + 2, label, SMALL_SIZE - 1, "#555555")
    for row, (name, values) in enumerate(zip(names, data, strict=True)):
        middle = top + row * BOX_ROW + BOX_ROW // 2
        low, q1, median, q3, high, outliers = box_stats(values)
        # thousands of outliers on a large build: one circle per pixel column they fall in
        for x in np.unique(np.round(left + (np.log10(outliers) - first) * span)):
            canvas.draw.ellipse([x - 1.5, middle - 1.5, x + 1.5, middle + 1.5], outline=MUTED)
        half = BOX_ROW * 0.3
        canvas.draw.line([(at(low), middle), (at(q1), middle)], fill=INK)
        canvas.draw.line([(at(q3), middle), (at(high), middle)], fill=INK)
        for end in (low, high):
            canvas.draw.line([(at(end), middle - half / 2), (at(end), middle + half / 2)], INK)
        canvas.draw.rectangle([at(q1), middle - half, at(q3), middle + half], outline=INK)
        canvas.draw.line([(at(median), middle - half), (at(median), middle + half)], ACCENT, 2)
        canvas.text((left - 8, middle), fitted(name), anchor="rm")
    canvas.text((PAD, PAD - 4), title, TITLE_SIZE, bold=True)
    canvas.text(((left + right) / 2, bottom + 26), axis_label, SMALL_SIZE, anchor="mt")
    return canvas.png()
