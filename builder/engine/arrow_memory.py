"""Give Arrow jemalloc, not its default mimalloc, in the build's own processes.

The export allocates and frees large buffers all the time (a bucket's rows, each column's
pages and their zstd output, a scratch file's batches). mimalloc hands freed spans back to
the system and maps fresh ones, which Linux backs with 2 MiB pages it zeroes first: at 5,000
episodes of the bench profile, zeroing pages was 6.5 % of a build's CPU samples, and the
build's kernel time 2.7–3.1 s. With jemalloc, which keeps freed memory for reuse, the zeroing
is 1.1 % of the samples and the kernel time ≈ 2.1 s, with a lower peak (docs/performance.md).

Arrow picks its allocator once, from ``ARROW_DEFAULT_MEMORY_POOL``, when pyarrow is first
imported, so this is set before that, and the processes the command starts (its ingest
workers) inherit it. ``episodes`` sets it; a library caller of ``build`` does not, and a
value the user set is kept. Only on Linux: the Linux wheels carry jemalloc, and Arrow warns
on stderr about a backend it was built without.
"""

from __future__ import annotations

import os
import sys

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def jemalloc_for_arrow() -> None:
    if sys.platform.startswith("linux"):
        os.environ.setdefault(POOL_VARIABLE, "jemalloc")
