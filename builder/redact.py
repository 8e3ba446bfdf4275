"""Secret redaction of the staging tables, before anything is derived or exported.

Agent traces routinely contain credentials printed by the code they ran. Every text column
that reaches a published config (code, outputs, reasoning, messages, hook values, answers,
question text, ...; ``REDACTED_COLUMNS``) is scanned for credential shapes, and each match
is replaced by a typed placeholder ``<REDACTED:kind>``. Ids, hashes, enums, paths and check
names are never touched: hashes stay those of the original values. Which is which is each
column's declared role in ``schemas.tables``.

Kinds, in the order they are applied (``PATTERN_DOCS`` describes each):

* ``gcp_service_account``: the ``private_key_id`` and ``private_key`` fields of a
  service-account JSON (quoted keys, as the JSON file, a Python dict repr or escaped JSON);
* ``private_key``: PEM private key blocks (RSA, EC, OPENSSH, PKCS#8, encrypted, PGP), with
  real or ``\\n``-escaped newlines; an unterminated block is cut at the end of its body;
* ``aws_access_key``: ``AKIA``/``ASIA``/``ABIA``/``ACCA`` + 16 upper-case letters or digits;
* ``aws_secret_key``: 40 base64 characters assigned to ``aws_secret_access_key``,
  ``SecretAccessKey``, ... (``=`` or ``:``, quoted or not);
* ``anthropic_key`` (``sk-ant-…``), ``openai_key`` (``sk-proj-…``, ``sk-svcacct-…``,
  ``sk-admin-…``, legacy ``sk-`` + 32+ letters/digits), ``hf_token`` (``hf_`` + 34
  letters), ``github_token`` (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 36,
  ``github_pat_…``), ``slack_token`` (``xox[abeprs]-<digits>-…``), ``slack_webhook``;
* ``url_password``: ``scheme://user:password@host`` keeps the user and the host;
* user ``extra_patterns`` (whole match replaced), in their given order;
* ``secret_assignment``: a value of 16+ characters assigned (``=``/``:``, quoted or not,
  type annotation allowed) to a name containing ``api_key``, ``secret``, ``token``,
  ``password``/``passwd``/``pwd``, ``access_key``, ``private_key`` or ``credential``, or
  stored as the hook value of a variable so named, when it looks random: it mixes three of
  lower case, upper case, digits and symbols (``+/=!@#$%^&*~``), or has 32+ characters with
  letters and digits, its Shannon entropy is at least 3 bits per character, and it is not
  a dotted name (``settings.SECRET_KEY``). Candidates are found by one regex pass; the
  randomness test runs in Python on the distinct candidates only. Every occurrence of an
  accepted value, in any redacted column of any table, is replaced (only the value: the
  name and the quotes stay).

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

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from builder.config import BuildConfig
from builder.hashing import normalize_question_text
from schemas.tables import REDACTED_ROLES, TABLES, columns_with_role

PLACEHOLDER = "<REDACTED:{kind}>"
SECRET_ASSIGNMENT = "secret_assignment"
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")

# Columns whose text reaches a published config, by table: those whose declared role
# (``schemas.tables``) is free text or JSON text. ``list<string>`` columns are redacted
# element by element. Every other column (ids, hashes, enums, input paths, check names,
# ``questions.normalized_text``, which is recomputed from the redacted question text) is
# never touched.
REDACTED_COLUMNS: dict[str, tuple[str, ...]] = {
    name: columns_with_role(schema, *REDACTED_ROLES) for name, schema in TABLES.items()
}

# ----------------------------------------------------------------------------- patterns

_Q = r"""\\*["']"""  # a quote, possibly escaped (once or more: JSON inside JSON)
_PEM_BODY = r"""(?:[A-Za-z0-9+/=\s:,.()-]|\\+[nrt])"""
_VALUE_CHARS = r"A-Za-z0-9+/=_.~!@#$%^&*-"
_SECRET_NAME = (
    r"(?i:[A-Za-z0-9_-]*(?:api[_-]?key|secret|token|passw(?:or)?d|pwd|access[_-]?key"
    r"|private[_-]?key|credentials?)[A-Za-z0-9_-]*)"
)


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: str
    replacement: str  # may use the regex's numbered groups: ${1}


def _whole(kind: str, regex: str) -> Pattern:
    return Pattern(kind, regex, PLACEHOLDER.format(kind=kind))


def _keep(kind: str, regex: str, after: bool = False) -> Pattern:
    """Group 1 (and group 2 when ``after``) are kept around the placeholder."""
    tail = "${2}" if after else ""
    return Pattern(kind, regex, "${1}" + PLACEHOLDER.format(kind=kind) + tail)


BUILTIN_PATTERNS: tuple[Pattern, ...] = (
    _keep(
        "gcp_service_account",
        rf"({_Q}private_key_id{_Q}\s*:\s*{_Q})[0-9a-f]{{40}}",
    ),
    _keep(
        "gcp_service_account",
        rf"({_Q}private_key{_Q}\s*:\s*{_Q})-----BEGIN PRIVATE KEY-----{_PEM_BODY}*?"
        r"-----END PRIVATE KEY-----(?:\\+n|\n)?",
    ),
    _whole(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:"
        rf"{_PEM_BODY}*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:[A-Za-z0-9+/=\r\n]|\\+[nr])*)",
    ),
    _whole("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    _keep(
        "aws_secret_key",
        r"((?i:aws[_-]?secret[_-]?(?:access[_-]?)?key|secret[_-]?access[_-]?key)"
        rf"(?:{_Q})?\s*[:=]\s*(?:{_Q})?)[A-Za-z0-9/+]{{40}}([^A-Za-z0-9/+=]|$)",
        after=True,
    ),
    _whole("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{32,}"),
    _whole(
        "openai_key",
        r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}|[A-Za-z0-9]{32,})",
    ),
    _whole("hf_token", r"\bhf_[A-Za-z]{34}\b"),
    _whole(
        "github_token",
        r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b",
    ),
    _whole("slack_token", r"\bxox[abeprs]-[0-9]{8,13}-[A-Za-z0-9-]{8,}"),
    _whole(
        "slack_webhook",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{24}",
    ),
    Pattern(
        "url_password",
        r"""(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@"'\\<>]*:)[^\s:/@"'\\<>${*][^\s:/@"'\\<>]*@""",
        "${1}<REDACTED:url_password>@",
    ),
)

# Candidates for secret_assignment: name, optional closing quote, optional annotation,
# ``=`` or ``:``, optional opening quote, the value.
ASSIGNMENT = (
    rf"{_SECRET_NAME}(?:{_Q})?\s*(?::\s*[A-Za-z_][A-Za-z0-9_.\[\]]*\s*)?[:=]\s*(?:{_Q})?"
    rf"(?P<value>[{_VALUE_CHARS}]{{16,}})"
)
_ASSIGNMENT_PY = re.compile(ASSIGNMENT)
_SECRET_NAME_FULL = rf"^{_SECRET_NAME}$"
_JSON_STRING_VALUE = rf'^"[{_VALUE_CHARS}]{{16,}}"$'
_SYMBOLS = frozenset("+/=!@#$%^&*~")
_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")

PATTERN_DOCS: dict[str, str] = {
    "gcp_service_account": "private_key_id and private_key fields of a GCP service-account JSON",
    "private_key": "PEM private key blocks (RSA, EC, OpenSSH, PKCS#8, encrypted, PGP)",
    "aws_access_key": "AWS access key ids (AKIA…, ASIA…)",
    "aws_secret_key": "AWS secret access keys assigned to aws_secret_access_key and the like",
    "anthropic_key": "Anthropic API keys (sk-ant-…)",
    "openai_key": "OpenAI API keys (sk-…, sk-proj-…)",
    "hf_token": "Hugging Face tokens (hf_…)",
    "github_token": "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
    "slack_token": "Slack tokens (xoxb-, xoxp-, …)",
    "slack_webhook": "Slack incoming-webhook URLs",
    "url_password": "passwords in URLs (scheme://user:password@host; user and host kept)",
    SECRET_ASSIGNMENT: "random-looking values (16+ characters) assigned to names like api_key, "
    "secret, token or password",
}


def looks_secret(value: str) -> bool:
    """The randomness test of a secret_assignment candidate value (see the module doc)."""
    if len(value) < 16:
        return False
    if _DOTTED_NAME.match(value) and not value.startswith("eyJ"):  # a JWT is dotted too
        return False
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(c in _SYMBOLS for c in value)
    mixed = lower + upper + digit + symbol >= 3 or (len(value) >= 32 and digit and lower | upper)
    return mixed and _entropy(value) >= 3.0


def _entropy(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


# ------------------------------------------------------------------------------ options


@dataclass(frozen=True)
class RedactionOptions:
    """``enabled``: off means no table is touched (publishing such a build needs --force).
    ``extra_patterns``: kind -> regex (Rust syntax), whole match replaced by
    ``<REDACTED:kind>``. ``allowlist``: exact strings never redacted."""

    enabled: bool = True
    extra_patterns: dict[str, str] = field(default_factory=dict)
    allowlist: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for kind, regex in self.extra_patterns.items():
            if not _KIND.match(kind):
                raise ValueError(f"redaction kind {kind!r} must match {_KIND.pattern}")
            try:
                empty = pl.Series([""], dtype=pl.String).str.contains(regex).item()
            except pl.exceptions.PolarsError as exc:
                raise ValueError(f"redaction pattern {kind!r}: invalid regex: {exc}") from None
            if empty:
                raise ValueError(f"redaction pattern {kind!r} matches the empty string")
        if any(not s for s in self.allowlist):
            raise ValueError("redaction allowlist entries must be non-empty strings")

    @classmethod
    def of(cls, config: BuildConfig) -> RedactionOptions:
        """The options a build's ``[redaction]`` settings ask for."""
        return cls(
            enabled=config.redaction_enabled,
            extra_patterns=dict(config.redaction_extra_patterns),
            allowlist=config.redaction_allowlist,
        )

    @property
    def patterns(self) -> tuple[Pattern, ...]:
        extra = tuple(_whole(k, r) for k, r in self.extra_patterns.items())
        return BUILTIN_PATTERNS + extra

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind, in the order they are applied (secret_assignment last)."""
        return tuple(dict.fromkeys([p.kind for p in self.patterns] + [SECRET_ASSIGNMENT]))


# ---------------------------------------------------------------------------- redaction


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
        allow = self.options.allowlist
        self._allow = sorted(set(allow), key=lambda s: (-len(s), s))
        self._marks = [f"\ue000REDACT-ALLOW-{i}\ue001" for i in range(len(self._allow))]
        self._lock = threading.Lock()

    def hits(self, values: pl.Expr) -> pl.Expr:
        """Does a value contain anything to redact? (one regex pass and one literal pass)"""
        hit = values.str.contains(self._any)
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


def _hit(column: str, dtype: pl.DataType, redactor: _Redactor) -> pl.Expr:
    """Whether each value of ``column`` has anything to redact (never null)."""
    if _is_list(dtype):
        return pl.col(column).list.eval(redactor.hits(pl.element())).list.any().fill_null(False)
    return redactor.hits(pl.col(column)).fill_null(False)


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
        mask = frame.select(_hit("v", series.dtype, redactor)).to_series()
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
    names = REDACTED_COLUMNS[name]
    # One select for every column's hit scan, so Polars runs the scans in parallel.
    masks = frame.select(_hit(c, frame.schema[c], redactor).alias(c) for c in names)
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
    """The secret_assignment values of every table: one regex pass finds the candidates,
    ``looks_secret`` decides on the distinct ones. Longest first."""
    frames = []
    for name in REDACTED_COLUMNS:
        frames += [
            f.select(pl.col("text").str.extract_all(ASSIGNMENT).explode())
            for f in _scan_texts(tables_dir, name)
        ]
    hooks = pl.scan_parquet(tables_dir / "hooks.parquet")
    named = pl.coalesce("variable_name", "name").str.contains(_SECRET_NAME_FULL)
    stored = hooks.filter(named & pl.col("value").str.contains(_JSON_STRING_VALUE))
    frames.append(stored.select(text=pl.concat_str(pl.lit("secret="), pl.col("value"))))
    found = pl.concat(frames).drop_nulls().unique().collect().to_series()
    return _accepted(found, options)


def _accepted(candidates: pl.Series, options: RedactionOptions) -> tuple[str, ...]:
    """The values of the distinct candidate matches that pass ``looks_secret``."""
    accepted = set()
    for text in candidates.to_list():
        match = _ASSIGNMENT_PY.search(text)
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


def redact_columns(
    frame: pl.DataFrame, columns: Iterable[str], options: RedactionOptions
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The same redaction on text columns of an in-memory frame (session rows, before they
    are replayed into conversations); returns the frame and the counts by kind."""
    columns = [c for c in columns if c in frame.columns]
    if not options.enabled or not columns or frame.is_empty():
        return frame, {}
    found = pl.concat([frame.get_column(c).str.extract_all(ASSIGNMENT) for c in columns])
    redactor = _Redactor(options, _accepted(found.explode().drop_nulls().unique(), options))
    redacted = frame.with_columns(redact_series(frame.get_column(c), redactor) for c in columns)
    return redacted, {kind: redactor.counts.get(kind, 0) for kind in options.kinds}
