"""Eval sets to decontaminate against: ``FILE[:FIELD]`` (JSONL — ``.jsonl``, ``.ndjson`` or
``.jsonlines`` — or JSON, gzipped or not, CSV, TSV, Parquet, Arrow or Feather, or a Hugging
Face dataset folder of such files or of ``save_to_disk`` Arrow files: a data file of another
kind in it is refused, not passed over), ``FIELD`` the column
holding the question (``question`` by default). No eval set ships with the project: their
licences differ; point the build at the files you evaluate on."""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa

from builder.errors import UsageError

DEFAULT_FIELD = "question"
_FIELD = re.compile(r"^[\w.-]+$")
_JSONL = (".jsonl", ".ndjson", ".jsonlines")  # JSON Lines under its three names
_JSON = (*_JSONL, ".json", *(f"{e}.gz" for e in (*_JSONL, ".json")))
_PARQUET = (".parquet", ".pq")
_ARROW = (".arrow", ".arrows", ".ipc", ".feather")  # Arrow IPC, stream or file (Feather 2)
_TABLES = (*_PARQUET, *_ARROW, ".csv", ".tsv")
# Data files of a kind not read here: in a folder they are refused, not passed over
_UNREAD = (
    *(".gz", ".zst", ".bz2", ".xz", ".lz4", ".zip", ".tar", ".tgz", ".7z"),
    *(".txt", ".xlsx", ".xls", ".ods", ".orc", ".avro", ".h5", ".hdf5", ".npy", ".npz"),
    *(".pkl", ".pickle", ".db", ".sqlite", ".sqlite3", ".duckdb", ".tfrecord", ".msgpack"),
    ".lance",
)
READ = (
    "JSONL (.jsonl, .ndjson, .jsonlines) or JSON, gzipped or not, CSV, TSV, Parquet "
    "(.parquet, .pq), Arrow (.arrow, .arrows, .ipc, .feather)"
)
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


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(_JSON):
        return "json"
    if name.endswith(_TABLES):
        return "table"
    return "unread" if name.endswith(_UNREAD) else None


def eval_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.name not in _METADATA)
        unread = [p for p in files if _kind(p) == "unread"]
        if unread:
            raise EvalSetUnreadable(
                f"{unread[0]}: not a kind of file an eval set is read from ({READ}): "
                "convert it, or give each file to read to --decontaminate"
            )
        found = [p for p in files if _kind(p) is not None]
        if found:
            return found
        raise EvalSetUnreadable(f"{path}: no eval set file in it ({READ})")
    raise EvalSetUnreadable(f"{path}: no such eval file or folder (given to --decontaminate)")


def _json_values(path: Path, field: str) -> tuple[list[object], set[str]]:
    data = path.read_bytes()
    if path.name.lower().endswith(".gz"):
        data = gzip.decompress(data)
    data = data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark
    head = data.lstrip()[:1]
    whole: object = None
    if head in (b"[", b"{"):
        try:
            whole = orjson.loads(data)
        except orjson.JSONDecodeError:
            if head == b"[":
                raise
    if isinstance(whole, list):
        records = whole
    elif isinstance(whole, dict):
        records = _records_of_object(whole, field)
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


def _records_of_object(whole: dict[str, object], field: str) -> list[object]:
    """One JSON object: columns (``{"question": [...], ...}``, or pandas' objects keyed by row
    label), records under one key (``{"data": [{...}, ...]}``, as ``datasets``' JSON reader
    takes with ``field``) or keyed by row label, or a single record."""
    column = whole.get(field)
    if isinstance(column, list):
        columns = {k: v for k, v in whole.items() if isinstance(v, list) and len(v) == len(column)}
        return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    if (
        isinstance(column, dict)
        and column
        and all(isinstance(v, dict) and v.keys() == column.keys() for v in whole.values())
    ):  # pandas' ``DataFrame.to_json()``: each column an object keyed by the row's label
        return [{k: v[label] for k, v in whole.items()} for label in column]  # type: ignore[union-attr]
    if (
        field not in whole
        and whole
        and all(isinstance(v, dict) and field in v for v in whole.values())
    ):
        return list(whole.values())  # ``to_json(orient="index")``: records keyed by label
    lists = [v for v in whole.values() if isinstance(v, list)]
    if field not in whole and len(lists) == 1 and all(isinstance(r, dict) for r in lists[0]):
        return list(lists[0])
    return [whole]


def _column(path: Path, field: str) -> tuple[list[object], set[str]]:
    if path.name.lower().endswith((".csv", ".tsv")):
        separator = "\t" if path.name.lower().endswith(".tsv") else ","
        frame = pl.read_csv(path, separator=separator, infer_schema=False)
        if field not in frame.columns:
            return [], set(frame.columns)
        return frame.get_column(field).to_list(), set(frame.columns)
    if path.name.lower().endswith(_PARQUET):
        table = pl.read_parquet_schema(path)
        if field not in table:
            return [], set(table)
        return pl.read_parquet(path, columns=[field]).get_column(field).to_list(), set(table)
    with pa.memory_map(str(path)) as source:  # Feather (version 2) is an Arrow IPC file
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
    items: list[str] = []
    for part in eval_files(path):
        try:
            if _kind(part) == "json":
                found, fields = _json_values(part, field)
            else:
                found, fields = _column(part, field)
        except (OSError, EOFError, pa.ArrowException, pl.exceptions.PolarsError, ValueError) as exc:
            if isinstance(exc, EvalSetUnreadable):
                raise
            raise EvalSetUnreadable(f"{part}: cannot read as an eval set ({exc})") from exc
        if field not in fields:
            known = ", ".join(sorted(fields)[:12]) or "none"
            raise EvalSetUnreadable(
                f"{part}: no field {field!r} (fields: {known}); name the question field as "
                f"{file}:FIELD"
            )
        texts = (
            _item_text(v, f"{part}: item {i} of field {field!r}") for i, v in enumerate(found, 1)
        )
        items += [t for t in texts if t is not None and t.strip()]
    name = path.stem if path.is_file() else path.name
    return EvalSet(name, file, field, tuple(items))


def _item_text(value: object, where: str) -> str | None:
    """An item's text: a string; the prompt of a chat (a list of ``role`` / ``content``
    messages: its user messages, content parts as text, or every message not the
    assistant's when none is the user's), as a model is asked it — not the chat's JSON,
    whose keys, roles and answers would outnumber the question's words; or the texts of a
    list of strings. Anything else is refused: its JSON would match nothing."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    messages = _messages(value)
    if messages:
        asked = [m for m in messages if m["role"] == "user"]
        asked = asked or [m for m in messages if m["role"] != "assistant"]
        return "\n".join(_content_text(m["content"]) for m in asked)
    kind = type(value).__name__
    raise EvalSetUnreadable(
        f"{where} holds a {kind}, not a question's text or a chat's messages: name the field "
        "that holds the question (FILE:FIELD)"
    )


def _messages(value: object) -> list[dict[str, object]]:
    """``value`` as a chat's messages (each a dict with ``role`` and ``content``), or none."""
    if not isinstance(value, list):
        return []
    chat = [m for m in value if isinstance(m, dict) and "role" in m and "content" in m]
    return chat if chat and len(chat) == len(value) else []


def _content_text(content: object) -> str:
    """A message's content as text: a string, or the ``text`` of its content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


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
