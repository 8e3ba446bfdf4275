"""The sections of the report page, one function each (the funnel and the rejects in
``builder.report.funnel``), from a build folder's numbers to escaped HTML
(``builder.report.html``). Every number a test (or a person) checks against the manifest
carries ``data-metric`` and ``data-value``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builder.report import charts, diff, lengths, stats
from builder.report.folder import BuildFolder
from builder.report.html import Node, Raw, el, num, table
from builder.report.rows import render_row
from schemas.vocabulary import SPLITS


def figure(name: str, fig: Any, caption: str | None = None) -> Raw:
    return el(
        "figure",
        Raw(charts.to_svg(fig, name)),
        el("figcaption", caption) if caption else None,
        class_="chart",
        data_chart=name,
    )


def section(anchor: str, title: str, *body: Node) -> Raw:
    return el("section", el("h2", title), body, id=anchor)


def header(build: BuildFolder) -> Raw:
    m = build.manifest
    hashing = m.get("hashing") or {}
    scheme = hashing.get("scheme", "exact")
    inputs = table(
        ("input", "kind", "lines", "valid", "rejected", "blank", "sha256"),
        [
            (
                el("td", i["path"], class_="mono"),
                i.get("kind", ""),
                num(i.get("lines", 0), f"input.{i['path']}.lines"),
                num(i.get("valid", 0), f"input.{i['path']}.valid"),
                num(i.get("rejected", 0), f"input.{i['path']}.rejected"),
                num(i.get("blank", 0), f"input.{i['path']}.blank"),
                el("td", str(i.get("sha256", ""))[:16] + "…", class_="mono"),
            )
            for i in m["inputs"]
        ]
        + _sessions_input(m.get("sessions")),
    )
    return el(
        "header",
        el("h1", "Build report"),
        el(
            "div",
            f"{build.path.name}: builder {m['builder_version']}, schema "
            f"{m.get('schema_version', '?')}, hash scheme {scheme}",
            class_="muted",
        ),
        el(
            "nav",
            [
                el("a", title, href=f"#{anchor}")
                for anchor, title in (
                    ("funnel", "Funnel"),
                    ("rejects", "Rejects and checks"),
                    ("distributions", "Distributions"),
                    ("lengths", "Lengths"),
                    ("splits", "Splits"),
                    ("rows", "Rows"),
                    ("changes", "Changes"),
                )
            ],
        ),
        el("details", el("summary", _count_inputs(len(m["inputs"]), m.get("sessions"))), inputs),
    )


DISTRIBUTIONS: tuple[tuple[str, str, str, str], ...] = (
    # key, title, x label, kind
    ("turns_per_trace", "Turns per trace", "turns", "columns"),
    ("hooks_per_trace", "Hooks per trace", "hooks", "columns"),
    ("consistency_per_episode", "Consistency traces per episode", "traces", "columns"),
    (
        "majority_agreement",
        "Majority agreement (share of traces)",
        "share",
        "columns",
    ),
    ("success_by_role", "Execution success, gold vs consistency", "", "rates"),
    ("answer_types", "Expected answer types (JSON)", "", "bars"),
    ("difficulty", "Question difficulty", "", "bars"),
    ("correction_error_types", "Self-correction: error types", "", "bars"),
    ("correction_attempts", "Self-correction: attempts since the error", "attempts", "columns"),
    ("actions_by_source", "Session actions by source", "", "bars"),
)


def _count_inputs(files: int, sessions: Mapping[str, Any] | None) -> str:
    """``3 input files``, ``3 input files and a sessions database``."""
    said = f"{files} input file" + ("" if files == 1 else "s")
    return said + (" and a sessions database" if sessions else "")


def _sessions_input(summary: Mapping[str, Any] | None) -> list[tuple[Node, ...]]:
    """The sessions database as a row of the inputs table: rows read, kept, rejected."""
    if not summary:
        return []
    source = str(summary.get("source", "sessions"))
    read = summary.get("rows_read") or {}
    rejected = summary.get("rejected") or {}
    n_read = int(read.get("sessions", 0)) + int(read.get("actions", 0))
    n_rejected = int(rejected.get("sessions", 0)) + int(rejected.get("actions", 0))
    return [
        (
            el("td", source, class_="mono"),
            "sessions (rows)",
            num(n_read, f"input.{source}.lines"),
            num(n_read - n_rejected, f"input.{source}.valid"),
            num(n_rejected, f"input.{source}.rejected"),
            "",
            el("td", str(summary.get("sha256", ""))[:16] + "…", class_="mono"),
        )
    ]


def distributions_section(found: Mapping[str, Any]) -> Raw:
    figures = []
    for key, title, xlabel, kind in DISTRIBUTIONS:
        if key not in found:
            continue
        values = found[key]
        if kind == "columns":
            fig = charts.columns(title, values, xlabel)
        elif kind == "rates":
            fig = charts.rates(title, values)
        else:
            fig = charts.bars(title, values, width=4.6)
        figures.append(figure(key, fig))
    return section(
        "distributions",
        "Distributions",
        el("div", figures, class_="charts") if figures else el("p", "No episodes.", class_="note"),
    )


def lengths_section(found: lengths.Lengths) -> Raw:
    estimated = found.tokens is None
    marks = {
        f"{limit // 1024}k tokens" + (" (est.)" if estimated else ""): limit
        * (lengths.CHARS_PER_TOKEN if estimated else 1)
        for limit in lengths.CONTEXT_LIMITS
    }
    chart = charts.lengths(
        "Characters per row" if estimated else f"Tokens per row ({found.tokenizer})",
        found.chars if estimated else (found.tokens or {}),
        "characters (log scale)" if estimated else "tokens (log scale)",
        marks,
    )

    def token_stats(name: str) -> list[tuple[str, int]]:
        if estimated:
            return []
        counts = found.token_counts(name)
        p50, p90 = lengths.percentiles(counts, (0.5, 0.9))
        return [("p50", p50), ("p90", p90), ("max", int(max(counts, default=0)))]

    rows: list[tuple[Any, ...]] = []
    for name in found.chars:
        s = lengths.summary(found, name)
        if not s["rows"]:  # no lengths to speak of: a dash, not a 0 that reads as one
            dashes = 4 + len(token_stats(name) or ()) + len(s["over"])
            dash = [el("td", "—", class_="num") for _ in range(dashes)]
            rows.append((name, num(0, f"lengths.{name}.rows"), *dash))
            continue
        rows.append(
            (
                name,
                num(s["rows"], f"lengths.{name}.rows"),
                num(s["chars_p50"], f"lengths.{name}.p50"),
                num(s["chars_p90"], f"lengths.{name}.p90"),
                num(s["chars_p99"], f"lengths.{name}.p99"),
                num(s["chars_max"], f"lengths.{name}.max"),
                *(num(v, f"lengths.{name}.tokens_{q}") for q, v in token_stats(name)),
                *(
                    el("td", f"{share:.1%}", class_="num", data_metric=f"lengths.{name}.over_{k}")
                    for k, share in s["over"].items()
                ),
            )
        )

    header = ("config", "rows", "p50 chars", "p90", "p99", "max")
    header += ("p50 tokens", "p90", "max") if not estimated else ()
    kind = "tokens" if not estimated else "tokens (est.)"
    limits = tuple(f"> {limit // 1024}k {kind}" for limit in lengths.CONTEXT_LIMITS)
    return section(
        "lengths",
        "Lengths",
        el(
            "p",
            "A row's text: every message content of the columns a trainer feeds the model "
            "(dpo: the prompt and the longer answer). Token counts are "
            + (
                "ESTIMATED as characters / 4 (pass --tokenizer PATH for real counts); the "
                "dashed lines mark 4k, 8k and 32k tokens at that rate."
                if estimated
                else f"from the tokenizer {found.tokenizer}, on the text without a chat "
                "template (with the special tokens the tokenizer adds)."
            ),
            class_="note",
        ),
        el("div", figure("lengths", chart), class_="charts"),
        table(header + limits, rows),
    )


def splits_section(build: BuildFolder, leak: stats.Leakage) -> Raw:
    m = build.manifest
    rows = []
    for name, meta in m["configs"].items():
        counts = meta["rows"]
        rows.append(
            (
                el("td", name, class_="mono"),
                meta.get("kind", ""),
                *(num(int(counts.get(s, 0)), f"rows.{name}.{s}") for s in SPLITS),
                num(sum(int(v) for v in counts.values()), f"rows.{name}.total"),
            )
        )
    ratios = m["splits"].get("ratios", {})
    clean = leak.shared_ids == 0 and leak.shared_texts == 0
    return section(
        "splits",
        "Splits",
        el(
            "p",
            "Ratios ",
            ", ".join(f"{s} {ratios.get(s)}" for s in SPLITS),
            f"; salt {m['splits'].get('salt')!s}; assignment sha256 ",
            el("code", str(m["splits"].get("assignment_sha256", ""))[:16] + "…"),
            class_="note",
        ),
        table(("config", "kind", *SPLITS, "total"), rows),
        el("h3", "Leakage"),
        el(
            "p",
            el("span", "no leakage" if clean else "LEAKAGE", class_="ok" if clean else "bad"),
            f": of {leak.questions:,} questions in {len(leak.configs_checked)} configs, ",
            el(
                "b",
                leak.shared_ids,
                data_metric="leakage.shared_question_ids",
                data_value=leak.shared_ids,
            ),
            " are found in more than one split, and ",
            el(
                "b",
                leak.shared_texts,
                data_metric="leakage.shared_texts",
                data_value=leak.shared_texts,
            ),
            " normalized question texts (the splits config).",
            el("span", " Examples: " + ", ".join(leak.examples)) if leak.examples else None,
        ),
    )


def rows_section(build: BuildFolder, per_config: int) -> Raw:
    parts: list[Node] = [
        el(
            "p",
            "The first rows of each training config's train split, as a trainer sees them. "
            "Greyed messages have weight 0 (context, not trained).",
            class_="note",
        )
    ]
    for name in build.configs("objective"):
        rows = build.head(name, per_config)
        parts.append(el("h3", name))
        parts += [render_row(row, name, i) for i, row in enumerate(rows)] or [
            el("p", "(no rows)", class_="note")
        ]
    return section("rows", "Rows", parts)


def changes_section(build: BuildFolder, against: Path | None) -> Raw:
    if against is None:
        return section(
            "changes",
            "Changes",
            el(
                "p",
                "Run with --against OTHER_BUILD (or its manifest.json) to compare.",
                class_="note",
            ),
        )
    name, other = diff.load_other(against)
    changes = diff.compare(other, build.manifest)
    files = diff.file_changes(other, build.manifest)
    moved = [c for c in changes if c.delta]
    rows = [
        (
            c.section,
            el("td", c.key, class_="mono"),
            num(c.before, f"diff.{c.section}.{c.key}.before"),
            num(c.after, f"diff.{c.section}.{c.key}.after"),
            el("td", f"{c.delta:+,}", class_="num " + ("pos" if c.delta > 0 else "neg")),
        )
        for c in moved
    ]
    return section(
        "changes",
        "Changes",
        el(
            "p",
            "Against ",
            el("code", name),
            f" (builder {other['builder_version']}).",
            class_="note",
        ),
        el(
            "p",
            "Files: ",
            ", ".join(f"{k} {v:,}" for k, v in files.items()),
            ".",
            data_files_changed=files["changed"] + files["added"] + files["removed"],
        ),
        table(("what", "key", "before", "after", "change"), rows)
        if rows
        else el("p", "No count changed.", class_="ok"),
    )
