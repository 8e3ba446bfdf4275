"""A few rows of a training config, rendered as a person reads them: each conversation column
as messages (role, text with its code blocks, tool calls; weight-0 messages greyed), each
list of steps as steps with their labels, and every other column (labels, rewards, hashes,
lineage) in a small table. Every value is escaped (``builder.report.html``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from builder.report.html import Node, Raw, el, table

FENCE = re.compile(r"```([\w+-]*)\n(.*?)(?:```|\Z)", re.DOTALL)
MAX_CHARS = 4000  # of one text shown; the rest is counted


def _clip(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    return text[:MAX_CHARS] + f"\n…[{len(text) - MAX_CHARS:,} more characters in the row]"


def text_block(text: str | None) -> Raw:
    """Text with its fenced code blocks as ``<pre><code>``."""
    if text is None:
        return el("span", "null", class_="null")
    text = _clip(text)
    parts: list[Node] = []
    last = 0
    for match in FENCE.finditer(text):
        if match.start() > last:
            parts.append(el("div", text[last : match.start()], class_="prose"))
        parts.append(el("pre", el("code", match.group(2), data_lang=match.group(1) or None)))
        last = match.end()
    if last < len(text):
        parts.append(el("div", text[last:], class_="prose"))
    return el("div", parts, class_="text")


def _tool_calls(calls: Sequence[Mapping[str, Any]] | None) -> Node:
    if not calls:
        return None
    items = []
    for call in calls:
        function = call.get("function") or {}
        items.append(
            el(
                "div",
                el("span", "tool call ", class_="tag"),
                el("code", function.get("name") or "?"),
                el("pre", el("code", function.get("arguments") or "")),
                class_="tool-call",
                data_id=call.get("id"),
            )
        )
    return items


def message(m: Mapping[str, Any]) -> Raw:
    weight = m.get("weight")
    classes = ["msg", f"role-{m.get('role') or 'none'}"]
    if weight == 0:
        classes.append("w0")
    badges: list[Node] = [el("span", m.get("role") or "?", class_="role")]
    if weight is not None:
        badges.append(el("span", f"weight {weight}", class_="weight"))
    if m.get("name"):
        badges.append(el("span", f"name {m['name']}", class_="tag"))
    if m.get("tool_call_id"):
        badges.append(el("span", f"answers {m['tool_call_id']}", class_="tag"))
    return el(
        "div",
        el("div", badges, class_="msg-head"),
        text_block(m.get("content")),
        _tool_calls(m.get("tool_calls")),
        class_=" ".join(classes),
        data_weight=weight,
    )


def _is_conversation(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) and "role" in v and "content" in v for v in value)
    )


def _steps(values: Sequence[Any], labels: Sequence[Any] | None) -> Raw:
    items = []
    for i, step in enumerate(values):
        label = labels[i] if labels is not None and i < len(labels) else None
        badge = None if label is None else el("span", f"label {label}", class_="label")
        items.append(
            el("li", badge, text_block(step if isinstance(step, str) else json.dumps(step)))
        )
    return el("ol", items, class_="steps")


def _scalar(value: Any) -> str:
    if isinstance(value, dict | list):
        return _clip(json.dumps(value, default=str, ensure_ascii=False))
    return "null" if value is None else _clip(str(value))


def render_row(row: Mapping[str, Any], config: str, index: int) -> Raw:
    """One row: conversations and texts first, then every other column."""
    blocks: list[Node] = []
    scalars: list[tuple[str, str]] = []
    labels = row.get("labels") if isinstance(row.get("labels"), list) else None
    for name, value in row.items():
        if _is_conversation(value):
            blocks.append(el("h4", name))
            blocks.append(el("div", [message(m) for m in value], class_="conversation"))
        elif name == "completions" and isinstance(value, list):
            blocks.append(el("h4", f"{name} (with labels)"))
            blocks.append(_steps(value, labels))
        elif name == "labels" and labels is not None:
            continue
        elif isinstance(value, str) and ("\n" in value or len(value) > 120):
            blocks.append(el("h4", name))
            blocks.append(text_block(value))
        else:
            scalars.append((name, _scalar(value)))
    fields = table(("column", "value"), [(k, el("td", v, class_="mono")) for k, v in scalars])
    return el(
        "details",
        el("summary", f"{config} row {index + 1}"),
        el("div", fields, class_="fields"),
        blocks,
        class_="row",
        data_config=config,
        open=index == 0,
    )
