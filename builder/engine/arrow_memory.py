"""Give Arrow jemalloc, not its default mimalloc, in the build's own processes.

The export allocates and frees large buffers all the time (a bucket's rows, each column's
pages and their zstd output, a scratch file's batches). mimalloc hands freed spans back to
the system and maps fresh ones, which Linux backs with 2 MiB pages it zeroes first: at 5,000
episodes of the bench profile, zeroing pages was 6.5 % of a build's CPU samples, and the
build's kernel time 2.7–3.1 s. With jemalloc, which keeps freed memory for reuse, the zeroing
is 1.1 % of the samples and the kernel time ≈ 2.1 s, with a lower peak (docs/performance-log.md).

Arrow picks its allocator once, from ``ARROW_DEFAULT_MEMORY_POOL``, when pyarrow is first
imported, so this is set before that, and the processes the command starts (its ingest
workers) inherit it. ``episodes`` sets it; a library caller of ``build`` does not, and a
value the user set is kept. Only where pyarrow is a Linux wheel (its ``libarrow`` inside the
package), which carries jemalloc: an Arrow built without it warns on stderr of the setting.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def jemalloc_for_arrow() -> None:
    if sys.platform.startswith("linux") and _arrow_of_a_wheel():
        os.environ.setdefault(POOL_VARIABLE, "jemalloc")


def _arrow_of_a_wheel() -> bool:
    """Whether pyarrow's C++ library is the one its Linux wheel bundles (found, not
    imported: importing pyarrow would fix its allocator)."""
    spec = importlib.util.find_spec("pyarrow")
    folders = spec.submodule_search_locations if spec is not None else None
    return any(any(Path(f).glob("libarrow.so.*")) for f in folders or ())
