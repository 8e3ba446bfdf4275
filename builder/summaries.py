"""Bounded stored values: the capture policy's size limit, enforced again at build time.

Capture stores scalars in full, DataFrames and Series as structured summaries, and large
containers (over 100 KB) as type + size metadata. A value that arrives larger than the limit
anyway is replaced by that metadata here, so one oversized hook cannot bloat every shard.
The hash is untouched: ``value_hash`` was computed on the full value and still verifies it.
"""

from __future__ import annotations

import json


def bound_stored_value(text: str, limit: int) -> tuple[str, bool]:
    """``(text, False)`` when within ``limit`` bytes, else ``(metadata JSON, True)``."""
    size = len(text.encode("utf-8"))
    if size <= limit:
        return text, False
    kind = {"{": "dict", "[": "list", '"': "str"}.get(text[:1], "scalar")
    return json.dumps({"size_bytes": size, "truncated": True, "type": kind}, sort_keys=True), True
