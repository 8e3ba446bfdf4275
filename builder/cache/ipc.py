"""The cache's Arrow IPC files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

# lz4: as fast to replay as uncompressed IPC once the sha256 check is counted, ≈ 3× smaller
IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


def write_ipc(table: pa.Table, path: Path) -> None:
    with pa.ipc.new_file(path, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)


def read_ipc(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()
