"""A file the user names for the builder to write whole (the rejects file, ``export-jsonl
--out``): written beside it and renamed over it, so a failure leaves no half file, unless
it is a device or a pipe (``/dev/null``, ``/dev/stdout``, a FIFO). Such a file is written
into as it is: a rename would put a regular file in its place (as root, in place of
``/dev/null`` itself). A link stays a link: the file it names is the one replaced.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def streamed(path: Path) -> bool:
    """Whether ``path`` (links followed) exists as neither a regular file nor a folder: a
    device or a pipe, written into rather than replaced."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def replaced(path: Path) -> Path:
    """The file that a new one renamed into place replaces: ``path``, or for a link, the
    file the link names."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path
