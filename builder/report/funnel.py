"""The page's sections on what came in and what was kept: the funnel from input lines to
training rows (with the session database's own), and the rejects and failed integrity checks
with examples and their raw lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from builder.report import charts, stats
from builder.report.folder import BuildFolder
from builder.report.html import Node, Raw, el, num, table
from builder.report.sections import figure, section
from schemas.vocabulary import MEANINGS, REASON_LABELS


def funnel_section(build: BuildFolder, steps: Sequence[stats.Step]) -> Raw:
    m = build.manifest
    exclusions = m["training_exclusions"]
    step = {s.key: s.count for s in steps}
    # Each tile names what it counts: episodes here, the sessions in their own table below.
    tiles = [
        ("episode lines", step["input_lines"], "tile.input_lines"),
        ("rejected lines and rows", m["rejects"]["total"], "rejects.total"),
        ("verified episodes", step["verified"], "tile.verified"),
        ("episodes that train", step["trainable"], "tile.trainable"),
    ]
    chart = charts.bars(
        "From episode lines to training rows",
        {s.label: s.count for s in steps},
        "episodes (lines) / rows",
        highlight=[s.label for s in steps if s.key.startswith("rows.")],
    )
    rows = sum(s.count for s in steps if s.key.startswith("rows."))
    empty = None
    if rows == 0:  # said first: every chart below is of nothing
        empty = el("p", "This build has no training rows: no config has a row to load.")
    return section(
        "funnel",
        "Funnel",
        empty,
        el(
            "div",
            [
                el("div", el("b", n, data_metric=k, data_value=n), label, class_="tile")
                for label, n, k in tiles
            ],
            class_="tiles",
        ),
        el(
            "div",
            figure(
                "funnel",
                chart,
                "Episode lines down to the episodes that train; then the rows each training "
                "config derives from them (sft and self_correction also hold session rows).",
            ),
            el(
                "div",
                table(
                    ("step", "count"),
                    [(s.label, num(s.count, f"funnel.{s.key}")) for s in steps],
                ),
                el("h3", "Excluded from training, by reason"),
                table(
                    ("reason", "episodes"),
                    [
                        (REASON_LABELS.get(k, k), num(int(v), f"exclusions.{k}"))
                        for k, v in exclusions.items()
                    ],
                ),
                _sessions(m.get("sessions")),
            ),
            class_="charts",
        ),
    )


def _sessions(summary: Mapping[str, Any] | None) -> Node:
    """The session database's own funnel (manifest ``sessions``), when there is one."""
    if not summary:
        return None
    rows: list[tuple[str, int, str]] = [
        ("sessions read", summary.get("sessions", 0), "sessions.sessions"),
        ("verified", summary.get("verified_sessions", 0), "sessions.verified_sessions"),
    ]
    rows += [
        (f"not replayed: {k}", v, f"sessions.excluded.{k}")
        for k, v in (summary.get("excluded_sessions") or {}).items()
    ]
    rows += [
        ("sft rows", summary.get("sft_rows", 0), "sessions.sft_rows"),
        ("self_correction rows", summary.get("self_correction_rows", 0), "sessions.sc_rows"),
        ("actions", summary.get("actions", 0), "sessions.actions"),
    ]
    rejected = summary.get("rejected") or {}
    rows += [
        (f"rejected {k}", rejected.get(k, 0), f"sessions.rejected.{k}")
        for k in ("sessions", "actions")
    ]
    return [
        el("h3", "Sessions"),
        table(("step", "count"), [(label, num(int(n), key)) for label, n, key in rows]),
    ]


def _where(example: Any) -> str:
    if example.line is not None:
        return f"{example.source_file}:{example.line}"
    return f"{example.source_file} [{example.key}]" if example.key else example.source_file


def rejects_section(build: BuildFolder, checks: Mapping[str, list[stats.CheckExample]]) -> Raw:
    m = build.manifest
    rejects = build.rejects
    by_kind = {k: int(v) for k, v in m["rejects"]["by_kind"].items() if v}
    episode_checks = {
        k: int(v) for k, v in (m["checks"].get("episodes_by_kind") or {}).items() if v
    }
    question_checks = {
        k: int(v) for k, v in (m["checks"].get("questions_by_kind") or {}).items() if v
    }
    parts: list[Node] = [
        el(
            "div",
            figure("rejects", charts.bars("Rejected lines and rows, by kind", by_kind)),
            figure(
                "checks",
                charts.bars(
                    "Failed integrity checks, by kind",
                    {
                        **episode_checks,
                        **{f"{k} (questions)": v for k, v in question_checks.items()},
                    },
                    "episodes (questions)",
                ),
            ),
            class_="charts",
        ),
        el(
            "p",
            "Rejects file: ",
            el("code", str(rejects.path) if rejects.path else "(none: no rejects)"),
            ". It holds every rejected line unchanged; the examples below show its start.",
            class_="note",
        ),
    ]
    for kind, count in sorted(by_kind.items()):
        rows: list[Sequence[Node]] = []
        raws: list[Node] = []
        for i, ex in enumerate(rejects.examples.get(kind, [])):
            anchor = f"raw-{kind}-{i}"
            rows.append(
                (
                    el("td", _where(ex), class_="mono"),
                    el("td", ex.path, class_="mono"),
                    ex.message,
                    el("td", el("a", "raw line", href=f"#{anchor}")),
                )
            )
            raws.append(
                el(
                    "details",
                    el("summary", f"raw: {_where(ex)}"),
                    el("pre", ex.raw),
                    id=anchor,
                    class_="raw",
                )
            )
        parts += [
            el(
                "h3",
                kind,
                " ",
                el("span", f"({count:,})", data_metric=f"rejects.{kind}", data_value=count),
            ),
            table(("where", "JSON path", "message", ""), rows),
            raws,
        ]
    if not by_kind:
        parts.append(el("p", "No line or row was rejected.", class_="ok"))
    failed = {**episode_checks, **{f"{k} (questions)": v for k, v in question_checks.items()}}
    for kind, count in failed.items():
        examples = checks.get(kind, [])
        parts += [
            el(
                "h3",
                f"check {kind} ",
                el("span", f"({count:,})", data_metric=f"checks.{kind}", data_value=count),
            ),
            el("p", MEANINGS.get(kind.removesuffix(" (questions)"), ""), class_="note"),
            table(
                ("where", "question" if kind.endswith("(questions)") else "episode", "failed"),
                [
                    (el("td", e.where, class_="mono"), e.row_id, ", ".join(e.kinds))
                    for e in examples
                ],
            )
            if examples
            else el(
                "p",
                "No row of the tables carries this check: the record it failed on was "
                "rejected (see the rejects above).",
                class_="note",
            ),
        ]
    if not episode_checks and not question_checks:
        parts.append(el("p", "Every integrity check passed.", class_="ok"))
    return section("rejects", "Rejects and checks", parts)
