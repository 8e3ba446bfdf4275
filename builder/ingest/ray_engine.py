"""The per-batch work on Ray Data: ``engine = "ray"``.

The driver reads the inputs and cuts them into batches of lines exactly as the local engines
do (``builder.ingest``); each batch becomes one row of an Arrow table (its lines as an Arrow
IPC blob), and ``Dataset.map_batches(..., batch_format="pyarrow")`` runs the same pure
Arrow→Arrow step as the local engine — ``normalize_batch`` with its result encoded by
``builder.ingest.codec`` — on the Ray workers. Results come back in input order (rows carry
their sequence number) and the driver commits them with the same build-wide commit, so the
output is byte-identical to the local engine's (``tests/builder/test_ray_engine.py``).

Batches are submitted in windows of ``window`` batches (default: twice the cluster's CPUs),
one Ray Data dataset per window, the next window running while the driver commits the
previous one; so memory is bounded by two windows of batches (≤ 16 MB of lines each), not
by the input.

``ray_address``: None starts a local Ray with 2 CPUs (or joins one this process already
started); ``"auto"`` or ``"ray://host:10001"`` joins an existing cluster, whose workers must
be able to import ``builder`` and ``schemas`` (install this package on every node, or pass
``runtime_env={"py_modules": [...]}``, see the README).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from typing import Any

import pyarrow as pa

from builder.ingest.codec import (
    BATCH_SCHEMAS,
    LINES,
    batch_from_record_batches,
    batch_to_record_batches,
    from_ipc,
    lines_from_table,
    lines_table,
    one_batch,
    to_ipc,
)

LOCAL_CPUS = 2

REQUESTS = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("limit", pa.int64(), nullable=False),
        pa.field("precision", pa.int64()),  # hash precision; null: the exact scheme
        pa.field("tolerance", pa.float64()),  # answer tolerance; null: by hash only
        pa.field("lines", pa.large_binary(), nullable=False),
    ]
)
RESULTS = pa.schema(
    [pa.field("seq", pa.int64(), nullable=False)]
    + [pa.field(name, pa.large_binary(), nullable=False) for name in BATCH_SCHEMAS]
)


def _request(
    seq: int, lines: list[Any], limit: int, precision: int | None, tolerance: float | None
) -> pa.Table:
    blob = to_ipc(one_batch(lines_table(lines), LINES))
    row = {
        "seq": seq,
        "limit": limit,
        "precision": precision,
        "tolerance": tolerance,
        "lines": blob,
    }
    return pa.Table.from_pylist([row], schema=REQUESTS)


def normalize_requests(requests: pa.Table, fn: Callable[..., Any]) -> pa.Table:
    """The Ray Data UDF: Arrow rows of line batches → Arrow rows of encoded results."""
    rows = []
    for request in requests.to_pylist():
        lines_batch = from_ipc(request["lines"])
        lines = lines_from_table(pa.Table.from_batches([lines_batch]))
        result = fn(lines, request["limit"], request["precision"], request["tolerance"])
        encoded = batch_to_record_batches(result)
        rows.append({"seq": request["seq"], **{k: to_ipc(v) for k, v in encoded.items()}})
    return pa.Table.from_pylist(rows, schema=RESULTS)


def decode_results(table: pa.Table) -> list[tuple[int, Any]]:
    out = []
    for row in table.to_pylist():
        batches = {name: from_ipc(row[name]) for name in BATCH_SCHEMAS}
        out.append((row["seq"], batch_from_record_batches(batches)))
    return out


class RayEngine:
    """``Engine`` on Ray Data; ``map`` yields results in item order."""

    def __init__(self, address: str | None = None, window: int | None = None) -> None:
        import ray

        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            if address is None:
                ray.init(
                    num_cpus=LOCAL_CPUS,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", LOCAL_CPUS))
        self.workers = max(1, cpus)
        self.window = window or max(2, 2 * self.workers)
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # one line per window otherwise
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False

    def _run(self, fn: Callable[..., Any], requests: list[pa.Table]) -> pa.Table:
        """One window on Ray Data (in a driver thread, so the next window runs while the
        build commits this one)."""
        ds = self._ray.data.from_arrow(requests)
        ds = ds.map_batches(
            normalize_requests,
            batch_size=1,
            batch_format="pyarrow",
            fn_kwargs={"fn": fn},
            zero_copy_batch=True,
        )
        refs = ds.materialize().to_arrow_refs()
        return pa.concat_tables(self._ray.get(refs))

    def map(self, fn: Callable[..., Any], items: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        numbered = ((seq, item) for seq, item in enumerate(items))
        pending: deque[tuple[int, Future[pa.Table]]] = deque()  # (first seq, window)
        with ThreadPoolExecutor(1, thread_name_prefix="ray-window") as driver:

            def next_window() -> None:
                window = list(islice(numbered, self.window))
                if window:
                    requests = [_request(seq, *item) for seq, item in window]
                    pending.append((window[0][0], driver.submit(self._run, fn, requests)))

            next_window()
            while pending:
                first, future = pending.popleft()
                next_window()  # runs while this window's results are committed
                results = sorted(decode_results(future.result()), key=lambda r: r[0])
                for expected, (seq, result) in enumerate(results, start=first):
                    if seq != expected:
                        raise RuntimeError(f"ray engine: batch {expected} missing (got {seq})")
                    yield result

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
