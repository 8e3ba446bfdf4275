"""Values of a record as the tables store them: any-typed values as canonical JSON text,
capture times in UTC, fields the line left out as null."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from json import JSONEncoder
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from builder.contract.hashing import canonical_json
from builder.validate.fastpath import UNSET, FastRecord

Dump = Callable[[Any], str]


def utc(moment: datetime | None) -> datetime | None:
    """Naive capture times are read as UTC so the column has one time zone."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# ``json.dumps(value, sort_keys=True)`` builds an encoder, and the encoder its C scanner,
# anew on every call: most values stored are small, so that setup was most of their cost.
# Built once here, with the stdlib's own settings, it writes the same text. (Without the
# circular-reference check: a value decoded from JSON text cannot hold itself.)
_SORTED_KEYS = JSONEncoder(sort_keys=True)
_C_SORTED_KEYS = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None,
        _SORTED_KEYS.default,
        encode_basestring_ascii,
        None,
        _SORTED_KEYS.key_separator,
        _SORTED_KEYS.item_separator,
        True,
        _SORTED_KEYS.skipkeys,
        _SORTED_KEYS.allow_nan,
    )
)


def decoded_json(value: Any) -> str:
    """``canonical_json`` of a value decoded from JSON text (dict/list/str/int/float/bool/
    None, finite floats only): ``normalize_value`` is the identity on those, so this is the
    same text without the walk."""
    if _C_SORTED_KEYS is None:
        return _SORTED_KEYS.encode(value)
    return "".join(_C_SORTED_KEYS(value, 0))


def record_json(value: Any) -> str:
    """``canonical_json`` of a pydantic record's value, through the encoder built once: the
    record holds what the line's parse gave (JSON types only, NaN and integers past 64 bits
    included, which that encoder writes as ``json.dumps`` does), for which the two texts are
    the same. A value of any other type (a record built in code, not from a line) makes the
    encoder raise, and is written by ``canonical_json`` itself."""
    try:
        return decoded_json(value)
    except TypeError:
        return canonical_json(value)


def value_of(model: Any, name: str) -> Any:
    """The field's value; None when the line left it out."""
    value = getattr(model, name)
    return None if value is UNSET else value


def present(model: Any, name: str) -> bool:
    """Whether the line gave the field (a null given is present)."""
    if isinstance(model, FastRecord):
        return getattr(model, name) is not UNSET
    return name in model.model_fields_set


def json_text(model: Any, name: str, dump: Dump = canonical_json) -> str | None:
    """The field's canonical JSON text; None when the line left it out."""
    return dump(getattr(model, name)) if present(model, name) else None
