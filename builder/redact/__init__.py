"""Secret redaction of the staging tables, before anything is derived or exported.

Agent traces routinely contain credentials printed by the code they ran. Every text column
that reaches a published config (code, outputs, reasoning, messages, hook values, answers,
question text, ...; ``REDACTED_COLUMNS``) is scanned for credential shapes, and each match
is replaced by a typed placeholder ``<REDACTED:kind>``. Ids, hashes, enums, paths and check
names are never touched: hashes stay those of the original values. Which is which is each
column's declared role in ``schemas.tables``.

The kinds of secret, and the order they are applied in, are in ``builder.redact.patterns``.

All of it is vectorized: Polars ``str.replace_all`` per pattern (the Rust regex crate: no
lookaround, no backreferences), ``str.replace_many`` for the accepted values and the
allowlist, and only on the rows that a single combined pass finds to contain anything.
Allowlisted strings (exact strings) are swapped for private-use placeholders before the
patterns run and restored after, so they are never redacted, nor is anything overlapping
them. Counts are of replacements, by kind. ``TableRedactor`` redacts the staging tables a
batch at a time as the export's partition pass reads them (``builder.export.buckets``), so
memory stays that of one batch and nothing is rewritten; a batch with nothing to redact comes
back as the same frame. ``questions.normalized_text`` (which decides the split) is recomputed
from the redacted question text where that changed.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from builder.contract.hashing import normalize_question_text
from builder.redact.options import RedactionOptions
from builder.redact.patterns import (
    ASSIGNMENT,
    ASSIGNMENT_NEEDS_ASCII,
    ASSIGNMENT_PY,
    FOLDS_TO_ASCII,
    JSON_STRING_VALUE,
    PLACEHOLDER,
    SECRET_ASSIGNMENT,
    SECRET_NAME_FULL,
    looks_secret,
)
from schemas.tables import REDACTED_ROLES, TABLES, columns_with_role

# Columns whose text reaches a published config, by table: those whose declared role
# (``schemas.tables``) is free text or JSON text. ``list<string>`` columns are redacted
# element by element. Every other column (ids, hashes, enums, input paths, check names,
# ``questions.normalized_text``, which is recomputed from the redacted question text) is
# never touched.
REDACTED_COLUMNS: dict[str, tuple[str, ...]] = {
    name: columns_with_role(schema, *REDACTED_ROLES) for name, schema in TABLES.items()
}


@dataclass
class _Redactor:
    """The per-value rewrite, shared by every column: protect the allowlist, apply each
    pattern, then the accepted assignment values, restore the allowlist."""

    options: RedactionOptions
    values: tuple[str, ...]  # accepted secret_assignment values, longest first
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        patterns = self.options.patterns
        self._patterns = patterns
        self._any = "|".join(f"(?:{p.regex})" for p in patterns)
        self._needs = "|".join(f"(?:{p.required})" for p in patterns)
        allow = self.options.allowlist
        self._allow = sorted(set(allow), key=lambda s: (-len(s), s))
        self._marks = [f"\ue000REDACT-ALLOW-{i}\ue001" for i in range(len(self._allow))]
        self._lock = threading.Lock()

    def hits(self, values: pl.Expr) -> pl.Expr:
        """Does a value contain anything to redact? (one regex pass and one literal pass)"""
        return self._either(values, self._any)

    def may_hit(self, values: pl.Expr) -> pl.Expr:
        """True wherever ``hits`` is (and seldom elsewhere): every pattern's required
        literals in one pass, a fraction of the full patterns' cost on text that has none."""
        return self._either(values, self._needs)

    def _either(self, values: pl.Expr, regex: str) -> pl.Expr:
        hit = values.str.contains(regex)
        if self.values:
            hit = hit | values.str.contains_any(list(self.values))
        return hit

    def rewrite(
        self, frame: pl.DataFrame, on: Callable[[Callable[[pl.Expr], pl.Expr]], pl.Expr]
    ) -> pl.DataFrame:
        """``frame`` has one column ``v``; ``on(f)`` applies ``f`` to its strings."""

        def step(f: Callable[[pl.Expr], pl.Expr]) -> pl.DataFrame:
            return frame.select(on(f).alias("v"))

        if self._allow:
            frame = step(lambda e: e.str.replace_many(self._allow, self._marks, leftmost=True))
        for p in self._patterns:
            n = _total(frame, on(lambda e, p=p: e.str.count_matches(p.regex)))
            if n:
                with self._lock:  # batches may be redacted on several threads at once
                    self.counts[p.kind] += n
                frame = step(lambda e, p=p: e.str.replace_all(p.regex, p.replacement))
        if self.values:
            values = list(self.values)
            n = _total(frame, on(lambda e: e.str.extract_many(values, leftmost=True).list.len()))
            if n:
                with self._lock:
                    self.counts[SECRET_ASSIGNMENT] += n
                replacement = PLACEHOLDER.format(kind=SECRET_ASSIGNMENT)
                replacements = [replacement] * len(values)
                frame = step(lambda e: e.str.replace_many(values, replacements, leftmost=True))
        if self._allow:
            frame = step(lambda e: e.str.replace_many(self._marks, self._allow))
        return frame


def _total(frame: pl.DataFrame, per_value: pl.Expr) -> int:
    total = per_value.list.sum() if isinstance(frame.schema["v"], pl.List) else per_value
    return int(frame.select(total.sum()).item() or 0)


def _is_list(dtype: pl.DataType) -> bool:
    return isinstance(dtype, pl.List)


def _hit(column: str, dtype: pl.DataType, test: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
    """Whether ``test`` holds for each value of ``column`` (never null; a list: any element)."""
    if _is_list(dtype):
        return pl.col(column).list.eval(test(pl.element())).list.any().fill_null(False)
    return test(pl.col(column)).fill_null(False)


def _masks(frame: pl.DataFrame, names: list[str], redactor: _Redactor) -> dict[str, pl.Series]:
    """Which rows of each column have anything to redact: the literal pre-check of every
    column in one select (Polars runs the columns in parallel), then the full patterns only
    on the rows it lets through. The same masks as ``hits`` on every row: most text has none
    of the literals, and the patterns cost several times more than finding that out."""
    maybe = frame.select(_hit(c, frame.schema[c], redactor.may_hit).alias(c) for c in names)
    masks = {}
    for column in names:
        mask = maybe[column]
        if mask.any():
            rows = frame.select(pl.col(column).filter(mask))
            exact = rows.select(_hit(column, rows.schema[column], redactor.hits)).to_series()
            mask = _merge(mask, mask, exact)
        masks[column] = mask
    return masks


def redact_series(
    series: pl.Series, redactor: _Redactor, mask: pl.Series | None = None
) -> pl.Series:
    """The series with every value redacted; only rows with a hit (``mask``, computed here
    unless given) are rewritten."""
    is_list = _is_list(series.dtype)
    frame = series.to_frame("v")

    def on(f: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
        return pl.col("v").list.eval(f(pl.element())) if is_list else f(pl.col("v"))

    if mask is None:
        mask = _masks(frame, ["v"], redactor)["v"]
    if not mask.any():
        return series
    done = redactor.rewrite(frame.filter(mask), on).to_series()
    return _merge(series, mask, done)


def _merge(series: pl.Series, mask: pl.Series, replaced: pl.Series) -> pl.Series:
    """``series`` with the rows where ``mask`` holds taken from ``replaced``, in order
    (``Series.scatter`` does not take lists)."""
    kept = mask.not_().arg_true()
    order = pl.concat([kept, mask.arg_true()]).arg_sort()
    return pl.concat([series.gather(kept), replaced.cast(series.dtype)]).gather(order)


def _redact_frame(name: str, frame: pl.DataFrame, redactor: _Redactor) -> pl.DataFrame:
    names = [c for c in REDACTED_COLUMNS[name] if c in frame.columns]  # a lookup has a few
    masks = _masks(frame, names, redactor)
    columns = {}
    for column in names:
        before = frame[column]
        after = redact_series(before, redactor, masks[column])
        if after is not before:
            columns[column] = after
    if name == "questions" and "question_text" in columns:
        changed = (frame["question_text"] != columns["question_text"]).fill_null(False)
        texts = columns["question_text"].filter(changed).to_list()
        normalized = [None if t is None else normalize_question_text(t) for t in texts]
        replaced = pl.Series(normalized, dtype=pl.String)
        columns["normalized_text"] = _merge(frame["normalized_text"], changed, replaced)
    return frame.with_columns(**columns) if columns else frame


def _scan_texts(tables_dir: Path, name: str) -> Iterable[pl.LazyFrame]:
    scan = pl.scan_parquet(tables_dir / f"{name}.parquet")
    schema = scan.collect_schema()
    for column in REDACTED_COLUMNS[name]:
        text = pl.col(column).explode() if _is_list(schema[column]) else pl.col(column)
        yield scan.select(text.alias("text"))


def assignment_values(tables_dir: Path, options: RedactionOptions) -> tuple[str, ...]:
    """The secret_assignment values of every table: one regex pass finds the candidates (on
    the texts that contain a secret name's word), ``looks_secret`` decides on the distinct
    ones. Longest first."""
    frames = []
    for name in REDACTED_COLUMNS:
        frames += [
            f.filter(may_assign(pl.col("text"))).select(
                pl.col("text").str.extract_all(ASSIGNMENT).explode()
            )
            for f in _scan_texts(tables_dir, name)
        ]
    hooks = pl.scan_parquet(tables_dir / "hooks.parquet")
    named = pl.coalesce("variable_name", "name").str.contains(SECRET_NAME_FULL)
    stored = hooks.filter(named & pl.col("value").str.contains(JSON_STRING_VALUE))
    frames.append(stored.select(text=pl.concat_str(pl.lit("secret="), pl.col("value"))))
    found = pl.concat(frames).drop_nulls().unique().collect().to_series()
    return _accepted(found, options)


def may_assign(text: pl.Expr) -> pl.Expr:
    """Whether ``text`` may match ``ASSIGNMENT_NEEDS`` (and, with it, ``ASSIGNMENT``), by
    two searches that run fast: true wherever it does, and on text holding ``ſ`` or the
    Kelvin sign."""
    return text.str.contains(ASSIGNMENT_NEEDS_ASCII) | text.str.contains(FOLDS_TO_ASCII)


def _accepted(candidates: pl.Series, options: RedactionOptions) -> tuple[str, ...]:
    """The values of the distinct candidate matches that pass ``looks_secret``."""
    accepted = set()
    for text in candidates.to_list():
        match = ASSIGNMENT_PY.search(text)
        value = match["value"] if match else None
        if value and looks_secret(value) and value not in options.allowlist:
            accepted.add(value)
    return tuple(sorted(accepted, key=lambda s: (-len(s), s)))


class TableRedactor:
    """Redaction of the staging tables ``{tables_dir}/{name}.parquet`` as they are read, a
    batch at a time (``frame``), so no pass rewrites them. The accepted ``secret_assignment``
    values come from one read-only pre-pass over every table, made here, plus ``known``
    (those of the earlier segments: a value assigned in one input file is redacted in every
    later one, and ``values`` carries them on). Each row must go through ``frame`` exactly
    once for ``counts`` to be right."""

    def __init__(
        self, tables_dir: Path, options: RedactionOptions, known: Iterable[str] = ()
    ) -> None:
        self.options = options
        self._redactor = None
        self.values: tuple[str, ...] = ()
        if options.enabled:
            found = {*assignment_values(tables_dir, options), *known}
            self.values = tuple(sorted(found, key=lambda s: (-len(s), s)))
            self._redactor = _Redactor(options, self.values)

    def frame(self, name: str, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` (rows of table ``name``) redacted; the same object when nothing is."""
        if self._redactor is None or name not in REDACTED_COLUMNS:
            return frame
        return _redact_frame(name, frame, self._redactor)

    def counts(self) -> dict[str, int]:
        """Replacements by kind (every kind, zeros included; ``{}`` when disabled)."""
        if self._redactor is None:
            return {}
        return {kind: self._redactor.counts.get(kind, 0) for kind in self.options.kinds}


def redact_strings(
    texts: Iterable[str | None], options: RedactionOptions
) -> tuple[list[str | None], dict[str, int]]:
    """The same redaction on loose strings (tests, other readers); the secret_assignment
    values are found among these strings only."""
    series = pl.Series("v", list(texts), dtype=pl.String)
    if not options.enabled:
        return series.to_list(), {}
    found = series.str.extract_all(ASSIGNMENT).explode().drop_nulls().unique()
    redactor = _Redactor(options, _accepted(found, options))
    out = redact_series(series, redactor)
    return out.to_list(), {kind: redactor.counts.get(kind, 0) for kind in options.kinds}


def assigned_values(
    frames: Iterable[tuple[pl.DataFrame, Iterable[str]]], options: RedactionOptions
) -> tuple[str, ...]:
    """The accepted secret_assignment values in the text columns of in-memory frames
    (``(frame, columns)`` pairs), longest first."""
    found = [
        frame.get_column(c).str.extract_all(ASSIGNMENT)
        for frame, columns in frames
        for c in columns
        if c in frame.columns
    ]
    if not found:
        return ()
    return _accepted(pl.concat(found).explode().drop_nulls().unique(), options)


def redact_columns(
    frame: pl.DataFrame,
    columns: Iterable[str],
    options: RedactionOptions,
    values: Iterable[str] | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The same redaction on text columns of an in-memory frame (session rows, before they
    are replayed into conversations); returns the frame and the counts by kind. ``values``:
    the secret_assignment values to replace (default: those the frame's columns assign)."""
    columns = [c for c in columns if c in frame.columns]
    if not options.enabled or not columns or frame.is_empty():
        return frame, {}
    if values is None:
        values = assigned_values([(frame, columns)], options)
    redactor = _Redactor(options, tuple(sorted(set(values), key=lambda s: (-len(s), s))))
    redacted = frame.with_columns(redact_series(frame.get_column(c), redactor) for c in columns)
    return redacted, {kind: redactor.counts.get(kind, 0) for kind in options.kinds}
