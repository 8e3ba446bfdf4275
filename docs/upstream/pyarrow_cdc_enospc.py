"""pyarrow aborts the process when a write fails inside a column writer that uses
content-defined chunking (``use_content_defined_chunking=True``), instead of raising.

Reproduction (Linux, as root for the mount; pyarrow 26.0.1):

    mkdir -p /tmp/small && mount -t tmpfs -o size=1m tmpfs /tmp/small
    python pyarrow_cdc_enospc.py /tmp/small plain   # OSError: [Errno 28] ... (exit 1)
    rm -f /tmp/small/*
    python pyarrow_cdc_enospc.py /tmp/small cdc     # abort, exit 134:
    # column_writer.cc:1458: Check failed: _s.ok() Operation failed: WriteArrowDense(
    #   chunk_def_levels, chunk_rep_levels, chunk.levels_to_write, *chunk_array, ctx,
    #   maybe_parent_nulls)
    # Bad status: IOError: Error writing bytes to file. Detail: [errno 28] No space left on device

What triggers it: one ``write_table`` whose column's dictionary passes its limit (1 MB),
so the writer falls back to plain encoding and flushes its buffered pages to the sink from
inside ``WriteArrowDense``; the chunked path wraps that call in ``ARROW_CHECK_OK`` where the
unchunked path returns the status. The disk must fill during that flush: with the
builder's options (zstd, statistics, page index) the pages are smaller, and the same
script aborts when at most about 500 KB are free. With ``use_dictionary=False`` the same
full disk raises ``OSError`` cleanly; so does any write failure outside that call. It is
single-threaded: no thread is involved. Any I/O error of the sink at that moment (EIO,
EDQUOT, a network filesystem) aborts the same way.

The builder avoids it by giving the writer a sink that never fails
(``builder.fs.parquet.HeldErrorSink``) and raising the held error itself.
"""

import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

folder, mode = sys.argv[1], sys.argv[2]
text = pa.array([f"{i:08d}-" + os.urandom(400).hex() for i in range(3000)])  # ~2.4 MB, unique
table = pa.table({"text": text})
try:
    with pq.ParquetWriter(
        os.path.join(folder, "x.parquet"), table.schema, use_content_defined_chunking=mode == "cdc"
    ) as writer:
        writer.write_table(table)
except OSError as exc:
    print(f"OSError: {exc}")
    sys.exit(1)
print("written")
