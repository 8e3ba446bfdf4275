"""Keep numpy's OpenBLAS from starting threads in the build's own processes.

Importing numpy loads OpenBLAS, which starts a thread for every core but one; the threads
spin, waiting for work, for about a tenth of a CPU-second before they sleep: in the command
and in the ingest workers' fork server, in every build, on cores the build is using. The
build does no linear algebra (numpy holds arrays on their way to Arrow and Polars), so the
calling thread is all OpenBLAS needs.

OpenBLAS reads its thread count when it loads, so this is set before numpy is first
imported, and the processes the command starts inherit it. ``episodes`` sets it; a library
caller of ``build`` does not, and a value the user set is kept.
"""

from __future__ import annotations

import os


def one_blas_thread() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
