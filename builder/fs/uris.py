"""Whether a path names an object store (``scheme://…``) or a local file: a test on the
text alone, kept apart from ``builder.fs.storage`` so that deciding it imports no Arrow."""

from __future__ import annotations

import os
import re

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def is_uri(path: str | os.PathLike[str]) -> bool:
    return bool(_URI.match(str(path)))
