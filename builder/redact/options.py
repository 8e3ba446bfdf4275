"""The ``[redaction]`` settings of a build, checked when they are read."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from builder.config import BuildConfig
from builder.redact.patterns import BUILTIN_PATTERNS, KIND, SECRET_ASSIGNMENT, Pattern, whole


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
            if not KIND.match(kind):
                raise ValueError(f"redaction kind {kind!r} must match {KIND.pattern}")
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
        extra = tuple(whole(k, r) for k, r in self.extra_patterns.items())
        return BUILTIN_PATTERNS + extra

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind, in the order they are applied (secret_assignment last)."""
        return tuple(dict.fromkeys([p.kind for p in self.patterns] + [SECRET_ASSIGNMENT]))
