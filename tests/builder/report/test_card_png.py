"""``builder.report.card_png``: the card's charts drawn with Pillow, checked by their pixels
and against matplotlib's own box plot statistics."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from builder.report import card_png

BAR = (0x3B, 0x6E, 0xA8)
HIGHLIGHT = (0xC0, 0x50, 0x4D)


def pixels(png: bytes) -> np.ndarray:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return np.asarray(Image.open(BytesIO(png)).convert("RGB"))


def columns_of(image: np.ndarray, colour: tuple[int, int, int]) -> list[np.ndarray]:
    """Per row of pixels holding ``colour``, the columns where it is."""
    hit = (image == np.array(colour, dtype=np.uint8)).all(axis=2)
    return [np.flatnonzero(row) for row in hit if row.any()]


def test_the_same_numbers_draw_the_same_bytes() -> None:
    values = {"read": 5000, "valid": 4800, "sft rows": 4700}
    assert card_png.bars("t", values, "rows") == card_png.bars("t", dict(values), "rows")
    lengths = {"sft": np.arange(1, 2000), "dpo": np.arange(50, 90)}
    marks = {"4k": 16_384}
    assert card_png.lengths("t", lengths, "chars", marks) == card_png.lengths(
        "t", {k: v.copy() for k, v in lengths.items()}, "chars", marks
    )
    assert card_png.bars("t", values, "rows") != card_png.bars(
        "t", {**values, "read": 5001}, "rows"
    )


def test_bars_are_as_long_as_their_values_and_highlighted_ones_stand_out() -> None:
    image = pixels(card_png.bars("t", {"one": 1000, "two": 2000, "hi": 3000}, "x", ["hi"]))
    plain = columns_of(image, BAR)
    starts = {int(c[0]) for c in plain}
    assert len(starts) == 1  # every bar starts on the axis
    widths = sorted({int(c[-1] - c[0]) for c in plain})
    assert len(widths) == 2 and abs(widths[1] / widths[0] - 2) < 0.02
    accent = columns_of(image, HIGHLIGHT)
    assert accent and abs((accent[0][-1] - accent[0][0]) / widths[0] - 3) < 0.03


def test_a_bar_chart_of_nothing_says_none_in_one_line() -> None:
    empty = pixels(card_png.bars("Rejects", {}, "lines"))
    assert empty.shape[0] < 80 and not columns_of(empty, BAR)


@pytest.mark.parametrize(
    ("top", "ticks"),
    [
        (27_000, [0, 5000, 10_000, 15_000, 20_000, 25_000, 30_000]),
        (5, [0, 1, 2, 3, 4, 5]),
        (0.9, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0, [0, 1]),
    ],
)
def test_ticks_are_round_and_reach_the_top(top: float, ticks: list[float]) -> None:
    assert card_png.nice_ticks(top) == pytest.approx(ticks)


def test_tick_labels_are_short() -> None:
    labels = [card_png.compact(v) for v in (0, 950, 5000, 12_500, 3_000_000, 2e9)]
    assert labels == ["0", "950", "5k", "12.5k", "3M", "2G"]


@pytest.mark.parametrize("seed", range(5))
def test_box_statistics_are_matplotlibs(seed: int) -> None:
    from matplotlib import cbook

    rng = np.random.default_rng(seed)
    values = np.maximum(rng.lognormal(7, 1.2, 500 + 97 * seed).round(), 1)
    (expected,) = cbook.boxplot_stats(values)
    low, q1, median, q3, high, outliers = card_png.box_stats(values)
    assert (low, q1, median, q3, high) == pytest.approx(
        (expected["whislo"], expected["q1"], expected["med"], expected["q3"], expected["whishi"])
    )
    assert sorted(outliers) == sorted(expected["fliers"])


def test_the_lengths_chart_marks_each_limit_on_its_log_axis() -> None:
    marks = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
    image = pixels(card_png.lengths("t", {"a": np.arange(1, 500)}, "chars", marks))
    muted = np.array((0x9A, 0xA5, 0xB1), dtype=np.uint8)
    dashed = (image == muted).all(axis=2).sum(axis=0)
    lines = np.flatnonzero(dashed > 20)  # the three dashed lines, one pixel wide each
    assert len(lines) == 3
    gaps = np.diff(lines)  # a decade apart each: the same width on a log axis
    assert abs(gaps[0] - gaps[1]) <= 1


def test_missing_fonts_are_an_environment_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken matplotlib install (its fonts gone) ends the build in one line that says
    what to reinstall, not a traceback from FreeType."""
    import importlib.util

    from builder.errors import EnvironmentProblem

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    card_png._font_file.cache_clear()
    card_png.font.cache_clear()
    try:
        with pytest.raises(EnvironmentProblem, match=r"DejaVuSans\.ttf") as raised:
            card_png.bars("t", {"a": 1}, "x")
        assert "matplotlib" in raised.value.hint
    finally:
        card_png._font_file.cache_clear()
        card_png.font.cache_clear()


def test_a_long_label_is_cut_short_and_the_bars_keep_their_room() -> None:
    long = "check: " + "a_very_long_kind_name_" * 12
    image = pixels(card_png.bars("t", {long: 10, "short": 5}, "x"))
    widths = [int(c[-1] - c[0]) for c in columns_of(image, BAR)]
    assert widths and max(widths) > card_png.WIDTH // 3  # the longest bar keeps its room
    assert card_png.fitted(long).endswith("…")
    assert card_png.text_width(card_png.fitted(long)) <= card_png.LABEL_ROOM
    assert card_png.fitted("short") == "short"
    lengths = card_png.lengths("t", {long: np.arange(1, 100)}, "chars", {})
    assert pixels(lengths).shape[1] == card_png.WIDTH


def test_the_renderer_names_pillow_and_changes_with_the_fonts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import PIL

    real = card_png.renderer()
    assert real.startswith(f"pillow {PIL.__version__}, fonts ")
    other = tmp_path / "other.ttf"
    other.write_bytes(card_png._font_file(False).read_bytes() + b"\0")
    monkeypatch.setattr(card_png, "_font_file", lambda bold: other)
    card_png.renderer.cache_clear()
    try:
        assert card_png.renderer() != real
    finally:
        card_png.renderer.cache_clear()
