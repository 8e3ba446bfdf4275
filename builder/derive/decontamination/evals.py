"""Eval sets to decontaminate against: ``FILE[:FIELD]`` (JSONL, JSON, Parquet, or a Hugging
Face dataset folder of such files or of ``save_to_disk`` Arrow files), ``FIELD`` the column
holding the question (``question`` by default). No eval set ships with the project: their
licences differ; point the build at the files you evaluate on."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa

from builder.errors import UsageError

DEFAULT_FIELD = "question"
_FIELD = re.compile(r"^[\w.-]+$")
_SUFFIXES = (".jsonl", ".json", ".parquet", ".arrow")
# Files a dataset folder holds beside its data
_METADATA = {"dataset_info.json", "state.json", "dataset_dict.json"}


class EvalSetUnreadable(UsageError, ValueError):
    """An eval set named for decontamination cannot be read."""


@dataclass(frozen=True)
class EvalSet:
    name: str
    path: str
    field: str
    items: tuple[str, ...]  # the question texts, in file order (nulls and blanks dropped)


def parse_eval_spec(spec: str) -> tuple[str, str]:
    """``FILE[:FIELD]`` → (file, field). A path that exists as given is a file, colon or not."""
    if Path(spec).exists() or ":" not in spec:
        return spec, DEFAULT_FIELD
    path, _, field = spec.rpartition(":")
    if not _FIELD.match(field):
        return spec, DEFAULT_FIELD
    return path, field


def eval_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and p.suffix in _SUFFIXES and p.name not in _METADATA
        )
        if found:
            return found
        raise EvalSetUnreadable(f"{path}: no .jsonl, .json, .parquet or .arrow file in it")
    raise EvalSetUnreadable(f"{path}: no such eval file or folder (given to --decontaminate)")


def _json_values(path: Path, field: str) -> tuple[list[object], set[str]]:
    data = path.read_bytes()
    if data.lstrip()[:1] == b"[":
        records = orjson.loads(data)
    else:
        records = []
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise EvalSetUnreadable(f"{path}:{number}: not JSON ({exc})") from None
    fields: set[str] = set()
    values = []
    for record in records:
        if isinstance(record, dict):
            fields.update(record)
            values.append(record.get(field))
    return values, fields


def _column(path: Path, field: str) -> tuple[list[object], set[str]]:
    if path.suffix == ".parquet":
        table = pl.read_parquet_schema(path)
        if field not in table:
            return [], set(table)
        return pl.read_parquet(path, columns=[field]).get_column(field).to_list(), set(table)
    with pa.memory_map(str(path)) as source:
        try:
            arrow = pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            arrow = pa.ipc.open_file(source).read_all()
    if field not in arrow.column_names:
        return [], set(arrow.column_names)
    return arrow.column(field).to_pylist(), set(arrow.column_names)


def load_eval(spec: str) -> EvalSet:
    file, field = parse_eval_spec(spec)
    path = Path(file)
    values: list[object] = []
    for part in eval_files(path):
        try:
            if part.suffix in (".jsonl", ".json"):
                found, fields = _json_values(part, field)
            else:
                found, fields = _column(part, field)
        except (OSError, pa.ArrowException, pl.exceptions.PolarsError, ValueError) as exc:
            if isinstance(exc, EvalSetUnreadable):
                raise
            raise EvalSetUnreadable(f"{part}: cannot read as an eval set ({exc})") from exc
        if field not in fields:
            known = ", ".join(sorted(fields)[:12]) or "none"
            raise EvalSetUnreadable(
                f"{part}: no field {field!r} (fields: {known}); name the question field as "
                f"{file}:FIELD"
            )
        values += found
    items = tuple(
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        for v in values
        if v is not None and (not isinstance(v, str) or v.strip())
    )
    name = path.stem if path.is_file() else path.name
    return EvalSet(name, file, field, items)


def load_evals(specs: tuple[str, ...]) -> list[EvalSet]:
    """Every eval set, each under a distinct name (its file's stem; ``name-2`` on a clash)."""
    out: list[EvalSet] = []
    seen: dict[str, int] = {}
    for spec in specs:
        loaded = load_eval(spec)
        count = seen.get(loaded.name, 0) + 1
        seen[loaded.name] = count
        if count > 1:
            loaded = EvalSet(f"{loaded.name}-{count}", loaded.path, loaded.field, loaded.items)
        out.append(loaded)
    return out
