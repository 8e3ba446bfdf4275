"""The closing summary of a build: rows per config, rejects and checks by kind, time taken."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import TextIO

from builder.build import BuildReport


def _section(title: str, rows: Iterable[tuple[str, object]], out: TextIO) -> None:
    rows = list(rows)
    print(f"\n{title}", file=out)
    if not rows:
        print("  (none)", file=out)
        return
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}", file=out)


def _splits(rows: Mapping[str, int]) -> str:
    total = sum(rows.values())
    return f"{total:>9,}  " + "  ".join(f"{s} {n:,}" for s, n in rows.items())


def print_summary(report: BuildReport, out: TextIO = sys.stdout) -> None:
    m = report.manifest
    configs = m["configs"]
    _section("rows per config", ((n, _splits(c["rows"])) for n, c in configs.items()), out)
    _section("rejects by kind", m["rejects"]["by_kind"].items(), out)
    _section("checks failed (episodes)", m["checks"]["episodes_by_kind"].items(), out)
    _section("excluded from training", m["training_exclusions"].items(), out)
    if m.get("sessions"):
        sessions = m["sessions"]
        excluded = sessions["excluded_sessions"].items()
        _section("sessions not replayed (of " + str(sessions["sessions"]) + ")", excluded, out)
    if report.cache is not None:
        _section(f"incremental cache ({len(m['inputs'])} inputs)", report.cache.items(), out)
    if report.upload is not None:
        _section("upload (files)", report.upload.items(), out)
    lines = sum(i["lines"] for i in m["inputs"])
    print(f"\n{lines:,} input lines → {report.out} in {report.seconds:.1f} s", file=out)
