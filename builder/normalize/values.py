"""Values of a record as the tables store them: any-typed values as canonical JSON text,
capture times in UTC, fields the line left out as null."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from json import JSONEncoder
from typing import Any

from builder.contract.hashing import canonical_json
from builder.validate.fastpath import UNSET, FastRecord

Dump = Callable[[Any], str]


def utc(moment: datetime | None) -> datetime | None:
    """Naive capture times are read as UTC so the column has one time zone."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# ``json.dumps(value, sort_keys=True)`` builds this encoder anew on every call; it keeps no
# state between calls, so one serves them all (a small value's text in a tenth of the time).
_SORTED_KEYS = JSONEncoder(sort_keys=True)


def decoded_json(value: Any) -> str:
    """``canonical_json`` of a value decoded from JSON text (dict/list/str/int/float/bool/
    None, finite floats only): ``normalize_value`` is the identity on those, so this is the
    same text without the walk."""
    return _SORTED_KEYS.encode(value)


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
