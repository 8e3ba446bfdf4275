"""The closing summary of a build: rows per config, rejects and checks by kind, time taken."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from builder.normalize.checks import ROUNDED_PRECISION
from builder.pipeline import BuildReport
from schemas.vocabulary import (
    EXPECTED_ANSWER_HASH_MISMATCH,
    FINAL_ANSWER_HASH_MISMATCH,
    GROUND_TRUTH_MISMATCH,
    HASH_SCHEME_MISMATCH,
    PICKLE_HASH_SCHEME,
    REASON_LABELS,
    TRIANGULATION_MISMATCH,
    VERIFIED_MISMATCH,
)

HASH_CHECKS = (FINAL_ANSWER_HASH_MISMATCH, EXPECTED_ANSWER_HASH_MISMATCH, GROUND_TRUTH_MISMATCH)


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


def hash_scheme_warning(manifest: Mapping[str, Any]) -> str | None:
    """A likely misconfigured hash scheme: most hash checks that failed hold under the other
    scheme (``hash_scheme_mismatch``) rather than under none."""
    by_kind = manifest["checks"]["episodes_by_kind"]
    other = by_kind.get(HASH_SCHEME_MISMATCH, 0)
    failed = other + sum(by_kind.get(k, 0) for k in HASH_CHECKS)
    if other == 0 or other * 2 <= failed:
        return None
    hashing = manifest.get("hashing") or {"scheme": "exact", "precision": None}
    configured = hashing["scheme"] + (
        f" (precision {hashing['precision']})" if hashing["precision"] is not None else ""
    )
    suggestion = (
        f"--hash-precision {ROUNDED_PRECISION}"
        if hashing["precision"] is None
        else "--hash-precision exact"
    )
    return (
        f"{other} of {failed} episodes with a failed answer hash check hold under the other "
        f"hash scheme, not the configured {configured}; they are excluded from training. "
        f"If the capture side used it, build with {suggestion} ([hashing] precision in "
        "dataset.toml)."
    )


def pickle_scheme_warning(manifest: Mapping[str, Any]) -> str | None:
    """Episodes whose answer hashes are the capture code's first (pickle) scheme."""
    count = manifest["checks"]["episodes_by_kind"].get(PICKLE_HASH_SCHEME, 0)
    if count == 0:
        return None
    return (
        f"{count} episodes carry answer hashes of the capture code's first scheme (sha256 of "
        "the answer's Python pickle, replaced by its JSON scheme on 2025-12-21): the answers "
        "match them, but reward code cannot reproduce such hashes, so these episodes are "
        "excluded from training. Hash their answers again with the capture contract's "
        "scheme (a new capture file; this one stays as it is) to train on them."
    )


def empty_warning(manifest: Mapping[str, Any]) -> str | None:
    """A build whose inputs held no record at all: most likely the wrong file."""
    if any(i["records"] for i in manifest["inputs"]) or (manifest.get("sessions") or {}).get(
        "sessions"
    ):
        return None
    return (
        "the inputs hold no records, so the dataset has no rows: check the files named by "
        "--episodes and the banks (or [inputs] in dataset.toml)"
    )


def tolerance_hint(manifest: Mapping[str, Any]) -> str | None:
    """Verified or triangulation checks that failed while answers were compared by hash
    only: the capture code compares them by value, within a float tolerance."""
    if manifest["options"].get("answer_tolerance") is not None:
        return None
    by_kind = manifest["checks"]["episodes_by_kind"]
    count = max(by_kind.get(VERIFIED_MISMATCH, 0), by_kind.get(TRIANGULATION_MISMATCH, 0))
    if count == 0:
        return None
    return (
        f"{count} episodes fail the verified or triangulation checks by answer hash. The "
        "capture code verifies answers by value, numbers within ±0.1: if these episodes "
        "came from it, build with --answer-tolerance 0.1 ([checks] answer_tolerance in "
        "dataset.toml) to hold them to that as well."
    )


def correct_column_warning(manifest: Mapping[str, Any]) -> str | None:
    """The sessions' actions table has no ``correct`` column: no action can be marked
    incorrect, so every action of a verified session trains."""
    sessions = manifest.get("sessions") or {}
    if "correct" not in (sessions.get("absent_columns") or {}).get("actions", []):
        return None
    unread = (sessions.get("unread_columns") or {}).get("actions", [])
    alike = [c for c in unread if "correct" in c.lower()]
    told = ""
    if alike:
        told = f" Its column {', '.join(alike)} is not read: rename it to correct if it is that."
    return (
        "the sessions' actions table has no correct column, so no action is marked incorrect "
        "and every action of a verified session trains unless its run shows an error (the "
        f"seeds keep incorrect actions as context only).{told}"
    )


def _held_out(m: Mapping[str, Any], out: TextIO) -> None:
    """The leakage audit and the decontamination, in a few lines (the card has the rest)."""
    splits = m.get("splits") or {}
    audit, groups = splits.get("audit"), splits.get("groups") or {}
    if not audit:
        return
    at = audit["nearest_train_at_least"]
    rows: list[tuple[str, object]] = [
        (
            f"groups ({splits['group_by']})",
            f"{groups.get('groups', 0):,}, the largest "
            f"{groups.get('largest_group', 0):,}; {groups.get('too_large_groups', 0)} too large to "
            "hold out",
        ),
        ("held-out questions", f"{audit['held_out_questions']:,}"),
        ("nearest train ≥ 0.5 / 0.7 / 0.9", f"{at['0.5']} / {at['0.7']} / {at['0.9']}"),
        ("one word from a training question", audit.get("one_word_from_train", 0)),
        ("a training question ± a clause", audit.get("added_clause_from_train", 0)),
        ("bridging two splits (held out)", groups.get("bridges_splits", 0)),
    ]
    if splits.get("held_out_copies"):
        rows.append(("sessions asking a held-out question", splits["held_out_copies"]))
    if splits.get("held_out_copy_episodes"):
        rows.append(("episodes asking a held-out question", splits["held_out_copy_episodes"]))
    previous = splits.get("previous") or {}
    if previous.get("source"):
        kept = (
            "followed"
            if previous.get("followed")
            else (
                "not followed: other "
                + ", ".join(previous.get("differs", []))
                + f"; its {previous.get('held_out', 0):,} held-out questions kept"
            )
        )
        rows.append(("previous assignment", f"{previous['source']} ({kept})"))
    for found in (m.get("decontamination") or {}).get("evals", []):
        rows.append(
            (
                f"eval {found['name']}",
                f"{found['matched_items']:,} of {found['items']:,} items matched "
                f"({found['matched_share']:.1%}); {found['matched_questions']:,} questions, "
                f"{found['matched_episodes']:,} episodes"
                + (
                    f", {found['matched_sessions']:,} sessions"
                    if found.get("matched_sessions")
                    else ""
                )
                + " held out",
            )
        )
    _section("held out", rows, out)


def print_summary(report: BuildReport, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # the stream of the call, not of the import
    m = report.manifest
    configs = m["configs"]
    _section("rows per config", ((n, _splits(c["rows"])) for n, c in configs.items()), out)
    _section("rejects by kind", m["rejects"]["by_kind"].items(), out)
    _section("checks failed (episodes)", m["checks"]["episodes_by_kind"].items(), out)
    exclusions = ((REASON_LABELS.get(k, k), n) for k, n in m["training_exclusions"].items())
    _section("excluded from training", exclusions, out)
    _held_out(m, out)
    if m.get("duplicate_keys"):
        _section("duplicate JSON keys (the last one was kept)", m["duplicate_keys"].items(), out)
    if m.get("sessions"):
        sessions = m["sessions"]
        excluded = sessions["excluded_sessions"].items()
        _section("sessions not replayed (of " + str(sessions["sessions"]) + ")", excluded, out)
    if report.cache is not None:
        _section(f"incremental cache ({len(m['inputs'])} inputs)", report.cache.items(), out)
    if report.upload is not None:
        _section("upload (files)", report.upload.items(), out)
    if report.cache_busy is not None:
        print(
            f"\nnote: another build was using the cache {report.cache_busy}: this one ran "
            "without it (the result is the same, only slower)",
            file=out,
        )
    warnings = (hash_scheme_warning(m), pickle_scheme_warning(m), empty_warning(m))
    for warning in (*warnings, correct_column_warning(m)):
        if warning:
            print(f"\nwarning: {warning}", file=out)
    hint = tolerance_hint(m)
    if hint:
        print(f"\nnote: {hint}", file=out)
    lines = sum(i["lines"] for i in m["inputs"])
    records = sum(i["records"] for i in m["inputs"])
    blank = sum(i["blank"] for i in m["inputs"])
    read = f"{lines:,} input lines"
    if records + blank != lines:  # a JSON document spans many lines per record
        read += f" ({records:,} records)"
    rows_read = (m.get("sessions") or {}).get("rows_read")
    if rows_read:
        read += f" + {rows_read['sessions']:,} sessions, {rows_read['actions']:,} actions"
    print(f"\n{read} → {report.out} in {report.seconds:.1f} s", file=out)
