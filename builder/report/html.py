"""A tiny HTML builder that escapes by default: every ``str`` put in an element or an
attribute is escaped; only :class:`Raw` (the charts' SVG, made here) goes in as is. Agent
traces hold ``<script>`` and worse, and all of it must show as text."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TypeAlias


class Raw(str):
    """Markup made by this package (never data): inserted unescaped."""


Node: TypeAlias = str | int | float | Raw | Iterable["Node"] | None


def render(node: Node) -> str:
    if node is None:
        return ""
    if isinstance(node, Raw):
        return str(node)
    if isinstance(node, bool):
        return html.escape(str(node).lower())
    if isinstance(node, int | float):
        return html.escape(f"{node:,}" if isinstance(node, int) else f"{node:,.4g}")
    if isinstance(node, str):
        return html.escape(node, quote=True)
    return "".join(render(child) for child in node)


def _attr(name: str, value: object) -> str:
    name = name.rstrip("_").replace("_", "-")
    if value is True:
        return f" {name}"
    return f' {name}="{html.escape(str(value), quote=True)}"'


def el(tag: str, *children: Node, **attrs: object) -> Raw:
    """``<tag attrs>children</tag>``; ``class_`` for ``class``, ``data_x`` for ``data-x``;
    an attribute that is None or False is left out."""
    opened = "".join(_attr(k, v) for k, v in attrs.items() if v is not None and v is not False)
    return Raw(f"<{tag}{opened}>{render(children)}</{tag}>")


def table(header: Iterable[Node], rows: Iterable[Iterable[Node]], **attrs: object) -> Raw:
    head = el("thead", el("tr", [el("th", h) for h in header]))
    body = el(
        "tbody", [el("tr", [c if isinstance(c, Raw) else el("td", c) for c in r]) for r in rows]
    )
    return el("table", head, body, **attrs)


def num(value: int | float, metric: str, **attrs: object) -> Raw:
    """A table cell holding a number the page's tests read back (``data-metric``)."""
    return el("td", value, class_="num", data_metric=metric, data_value=value, **attrs)
