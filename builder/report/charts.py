"""Charts, drawn by matplotlib (no pyplot, no global state): SVG text for the report, PNG bytes
for the dataset card. Output is deterministic — fixed fonts, no dates or software version in
the files, SVG ids salted by the chart's name — so a rebuild writes the same bytes."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",  # shipped with matplotlib: the same glyphs on every machine
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "svg.fonttype": "none",  # text stays text: smaller, selectable
    "path.simplify": True,
}
COLOR, MUTED, ACCENT = "#3b6ea8", "#9aa5b1", "#c0504d"


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def to_svg(figure: Any, salt: str) -> str:
    """The figure as an ``<svg>`` element (no XML prolog, no date), ids salted by ``salt``."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": f"agent-traces/{salt}"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def to_png(figure: Any, dpi: int = 100) -> bytes:
    """PNG bytes with no software or time metadata."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def _styled(build: Any) -> Any:
    import matplotlib

    with matplotlib.rc_context(STYLE):
        return build()


def _integer_ticks(fmt: str) -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer="%" not in fmt)


def bars(
    title: str,
    values: Mapping[str, float],
    xlabel: str = "count",
    highlight: Sequence[str] = (),
    fmt: str = "{:,.0f}",
    width: float = 6.0,
) -> Any:
    """Horizontal bars, top to bottom in ``values``' order, each labelled with its value."""

    def build() -> Any:
        if not values:  # nothing to count: said in words, not drawn as an empty axis
            fig = _figure(width, 1.0)
            ax = fig.subplots()
            ax.set_axis_off()
            ax.set_title(title, loc="left")
            ax.text(0.0, 0.4, "none", transform=ax.transAxes, color=MUTED, va="center")
            return fig
        labels = list(values)
        numbers = list(values.values())
        fig = _figure(width, 0.6 + 0.28 * len(labels))
        ax = fig.subplots()
        colors = [ACCENT if label in highlight else COLOR for label in labels]
        drawn = ax.barh(range(len(labels)), numbers, color=colors)
        ax.set_yticks(range(len(labels)), labels)
        ax.invert_yaxis()
        ax.bar_label(drawn, labels=[fmt.format(v) for v in numbers], padding=3, fontsize=8)
        ax.xaxis.set_major_locator(_integer_ticks(fmt))
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        ax.margins(x=0.15)
        return fig

    return _styled(build)


def columns(
    title: str, values: Mapping[Any, int], xlabel: str, ylabel: str = "count", width: float = 4.2
) -> Any:
    """Vertical bars of a small distribution (value → count), labelled with the counts."""

    def build() -> Any:
        labels = [str(k) for k in values] or ["(none)"]
        numbers = list(values.values()) or [0]
        fig = _figure(width, 2.6)
        ax = fig.subplots()
        drawn = ax.bar(range(len(labels)), numbers, color=COLOR)
        step = max(1, len(labels) // 12)
        ax.set_xticks(range(0, len(labels), step), labels[::step])
        ax.bar_label(drawn, labels=[f"{v:,}" for v in numbers], padding=2, fontsize=7)
        ax.yaxis.set_major_locator(_integer_ticks("{:,}"))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, loc="left")
        ax.margins(y=0.15)
        return fig

    return _styled(build)


def rates(title: str, values: Mapping[str, tuple[int, int]]) -> Any:
    """Success rates by group: ``group → (succeeded, total)``, as percentages."""
    shares = {k: (100.0 * s / t if t else 0.0) for k, (s, t) in values.items()}
    labels = {f"{k} ({s:,} of {t:,})": shares[k] for k, (s, t) in values.items()}
    fig = bars(title, labels, "% of traces", fmt="{:.1f}%")
    fig.axes[0].set_xlim(0, 115)
    return fig


def lengths(
    title: str, per_config: Mapping[str, Sequence[int]], unit: str, marks: Mapping[str, int]
) -> Any:
    """A box plot of row lengths per config (log scale), with vertical lines at ``marks``
    (label → value, e.g. context limits)."""

    def build() -> Any:
        names = [n for n, v in per_config.items() if len(v)] or ["(none)"]
        data = [per_config.get(n, [1]) for n in names]
        fig = _figure(6.4, 0.9 + 0.34 * len(names))
        ax = fig.subplots()
        ax.boxplot(
            [np.maximum(np.asarray(d), 1) for d in data],
            orientation="horizontal",
            tick_labels=names,
            widths=0.6,
            showfliers=True,
            flierprops={"markersize": 2, "markeredgecolor": MUTED},
            medianprops={"color": ACCENT},
        )
        ax.invert_yaxis()
        ax.set_xscale("log")
        for label, value in marks.items():
            ax.axvline(value, color=MUTED, linestyle="--", linewidth=0.8)
            ax.annotate(
                label,
                (value, 0.98),
                xycoords=("data", "axes fraction"),
                xytext=(2, 0),
                textcoords="offset points",
                fontsize=7,
                color="#555",
                rotation=90,
                ha="left",
                va="top",
            )
        ax.set_xlabel(unit)
        ax.set_title(title, loc="left")
        return fig

    return _styled(build)
