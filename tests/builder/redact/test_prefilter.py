"""The literal pre-check of the redaction (``Pattern.needs``, ``_Redactor.may_hit``): it may
let through text that has nothing to redact, never skip text that has something.

Texts are built from the patterns' own fragments (the corpus's secrets, their literal
prefixes, case and Unicode variants that Rust's ``(?i)`` folds: ``ſ`` is an ``s``, the
Kelvin sign a ``k``) and near misses, so both sides of every literal are exercised.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.redact import _hit, _masks, _Redactor, may_assign, redact_strings
from builder.redact.options import RedactionOptions
from builder.redact.patterns import (
    ASSIGNMENT,
    ASSIGNMENT_NEEDS,
    BUILTIN_PATTERNS,
    FOLDS_TO_ASCII,
    Pattern,
)
from tests.builder.redact.test_redact import CORPUS_DATA

SECRETS = sorted(CORPUS_DATA.secrets.values())
TEXTS = sorted({c.text for c in CORPUS_DATA.cases + CORPUS_DATA.lookalikes})
FRAGMENTS = [
    *SECRETS,
    "private_key_id",
    '"private_key": "',
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN",
    "-----END PRIVATE KEY-----",
    "\\n",
    "\n",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "akia",
    "aws_secret_access_key",
    "AWS_SECRET_ACCESS_KEY",
    "ſecret_access_key",
    "ſECRET",
    "secret-access-\u212aey",
    "SecretAccessKey",
    "secre",
    "ecret",
    " = ",
    ": ",
    "=",
    '"',
    "'",
    "sk-",
    "sk-ant-",
    "sk-proj-",
    "SK-",
    "s k-",
    "hf_",
    "HF_",
    "ghp_",
    "gho_",
    "ghz_",
    "github_pat_",
    "xoxb-",
    "xoxz-",
    "xox",
    "eyJ",
    "eyj",
    ".",
    "Authorization",
    "auth_header",
    "Bearer ",
    "BEARER\t",
    "bearer",
    "beaRer ",
    "bear er",
    '"name": "Authorization", ',
    '"value": "Bearer ',
    "https://hooks.slack.com/services/T",
    "https://",
    "postgres://",
    "user:",
    "pa ss",
    "@",
    "host",
    "://",
    "/",
    "A" * 16,
    "a1B2c3D4e5F6g7H8i9J0" * 2,
    "0123456789abcdef" * 3,
    "12345678",
    "é",
    "中文",
    "\u212a",
    "ſ",
    "İ",
    " ",
    "\t",
    "",
]
TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)


def _redactor(extra: dict[str, str] | None = None, values: tuple[str, ...] = ()) -> _Redactor:
    return _Redactor(RedactionOptions(extra_patterns=extra or {}), values)


def _exact(series: pl.Series, redactor: _Redactor) -> list[bool]:
    frame = series.to_frame("v")
    return frame.select(_hit("v", series.dtype, redactor.hits)).to_series().to_list()


def _checked(texts: list[str | None], redactor: _Redactor) -> list[bool]:
    series = pl.Series("v", texts, dtype=pl.String)
    return _masks(series.to_frame(), ["v"], redactor)["v"].to_list()


@pytest.mark.parametrize("pattern", BUILTIN_PATTERNS, ids=lambda p: p.kind)
def test_every_builtin_pattern_names_what_its_matches_contain(pattern: Pattern) -> None:
    assert pattern.needs


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=8))
def test_every_match_of_a_pattern_contains_what_it_needs(texts: list[str]) -> None:
    series = pl.Series("v", texts + TEXTS, dtype=pl.String)
    for pattern in BUILTIN_PATTERNS:
        matches = series.str.extract_all(pattern.regex).explode().drop_nulls()
        assert matches.str.contains(pattern.required).all(), pattern.kind


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.one_of(TEXT, st.none()), min_size=1, max_size=8))
def test_the_masks_are_those_of_the_full_patterns(texts: list[str | None]) -> None:
    redactor = _redactor(values=("V4lue-0f-a-s3cret!",))
    texts = texts + TEXTS + ["x V4lue-0f-a-s3cret! y"]
    series = pl.Series("v", texts, dtype=pl.String)
    assert _checked(texts, redactor) == _exact(series, redactor)


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.one_of(st.lists(TEXT, max_size=4), st.none()), min_size=1, max_size=6))
def test_the_masks_of_list_columns_are_those_of_the_full_patterns(
    rows: list[list[str] | None],
) -> None:
    redactor = _redactor()
    series = pl.Series("v", [*rows, SECRETS], dtype=pl.List(pl.String))
    masks = _masks(series.to_frame(), ["v"], redactor)["v"].to_list()
    assert masks == _exact(series, redactor)


def test_unicode_case_variants_the_patterns_fold_are_not_skipped() -> None:
    # (?i) in Rust folds ſ to s and the Kelvin sign to k: an ASCII-only check would miss them
    key = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/AB"
    texts = [f"aws_ſecret_access_key={key}", f"ſECRET_ACCESS_\u212aEY: {key}", "plain text"]
    assert _checked(texts, _redactor()) == [True, True, False]
    out, counts = redact_strings(texts, RedactionOptions())
    assert counts["aws_secret_key"] == 2
    assert all(key not in t for t in out if t)


def test_a_user_pattern_is_its_own_requirement() -> None:
    redactor = _redactor({"ticket": r"TCK-[0-9]{6}"})
    texts = ["see TCK-123456", "see TCK-12345", "nothing"]
    assert _checked(texts, redactor) == [True, False, False]
    out, counts = redact_strings(texts, RedactionOptions(extra_patterns={"ticket": r"TCK-\d{6}"}))
    assert out[0] == "see <REDACTED:ticket>" and counts["ticket"] == 1


def test_text_with_none_of_the_literals_is_not_checked_further() -> None:
    redactor = _redactor()
    texts = ["import pandas as pd", "df.head()", "token_count = 3", None]
    series = pl.Series("v", texts, dtype=pl.String).to_frame()
    maybe = series.select(_hit("v", pl.String(), redactor.may_hit)).to_series()
    assert not maybe.any()


NAME_PARTS = [
    *FRAGMENTS,
    "api_key",
    "API-KEY",
    "apikey",
    "api_\u212aey",
    "token",
    "TO\u212aEN",
    "passwd",
    "PAſſWORD",
    "pwd",
    "access-key",
    "private_key",
    "credentials",
    "Credential",
    "my_",
    "_x",
    ": str",
    " = ",
    "=",
    '"',
    "'",
]


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(
        st.lists(
            st.sampled_from(NAME_PARTS),
            max_size=10,
        ).map("".join),
        min_size=1,
        max_size=8,
    )
)
def test_every_assignment_candidate_contains_a_secret_names_word(texts: list[str]) -> None:
    series = pl.Series("v", texts + TEXTS, dtype=pl.String)
    matches = series.str.extract_all(ASSIGNMENT).explode().drop_nulls()
    assert matches.str.contains(ASSIGNMENT_NEEDS).all()
    kept = series.filter(series.str.contains(ASSIGNMENT_NEEDS))
    assert kept.str.extract_all(ASSIGNMENT).explode().drop_nulls().to_list() == matches.to_list()


def test_only_the_characters_named_fold_to_an_ascii_letter() -> None:
    every = pl.Series([chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000])
    folding = every.filter(every.str.contains(r"(?i)^[a-z]$")).to_list()
    named = every.filter(every.str.contains(f"^{FOLDS_TO_ASCII}$")).to_list()
    assert folding == named == ["\u017f", "\u212a"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(NAME_PARTS), max_size=8).map("".join), max_size=20))
def test_the_fast_assignment_precheck_lets_through_what_the_unicode_one_does(
    texts: list[str],
) -> None:
    frame = pl.DataFrame({"v": [*texts, *TEXTS, None]}, schema={"v": pl.String})
    fast = frame.select(may_assign(pl.col("v"))).to_series().fill_null(False)
    unicode = frame.select(pl.col("v").str.contains(ASSIGNMENT_NEEDS)).to_series()
    unicode = unicode.fill_null(False)
    assert (fast | ~unicode).all()  # never skips a text the Unicode check keeps
    folding = frame.select(pl.col("v").str.contains(FOLDS_TO_ASCII)).to_series()
    assert (fast == unicode).filter(~folding.fill_null(False)).all()  # equal elsewhere
    found = frame.filter(fast).select(pl.col("v").str.extract_all(ASSIGNMENT).explode())
    expected = frame.filter(unicode).select(pl.col("v").str.extract_all(ASSIGNMENT).explode())
    assert found.drop_nulls().equals(expected.drop_nulls())
