"""A JSON text of the tables read back as the value it holds, exactly."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# 19+ digits in a row: maybe an integer past 64 bits, which orjson reads as a float (10**20
# as 1e20, equal to it, so no line patch would restore the integer). ``json.loads`` keeps it
# exact; values of fewer digits read the same either way, so builds made before this rule
# still rebuild as they did, their integers now exact (``schemas.lines.REBUILD_RULE`` stays).
_LONG_DIGITS = re.compile(r"\d{19}")


def read_json_text(text: str | None) -> Any:
    """The value of ``text`` (None for None), as ``json.loads`` gives it."""
    if text is None:
        return None
    if _LONG_DIGITS.search(text):
        return json.loads(text)
    try:  # the same value as ``json.loads`` for what orjson reads, and several times faster
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, a lone surrogate
        return json.loads(text)
