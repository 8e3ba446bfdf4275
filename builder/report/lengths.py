"""How long the rows of each training config are: characters of the text a trainer reads, and
tokens when a local tokenizer is given; and the share of rows over common context limits.

A row's text is every message content (or string) of the columns a trainer feeds the model:
for ``dpo`` the prompt and the longer of chosen and rejected. Without a tokenizer, tokens are
*estimated* as characters / 4 and labelled so.

The build draws the card's length chart from these. It counts the characters of the files it
writes as it writes them (``builder.export.writer.row_chars``, the same numbers) and hands
them over (``of_build``'s ``counted``); any other file (a segment reused from the cache and
not in the memo, ``episodes report``) is read the way the build writes: a config's text
columns a batch of rows at a time, and only one number per row kept (an int32 array), so
memory does not grow with the text of the configs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import threading
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from builder.engine import default_workers
from builder.report.context_limits import CHARS_PER_TOKEN, CONTEXT_LIMITS
from builder.report.errors import TokenizerError
from builder.report.folder import BuildFolder
from schemas.row_text import TEXT_COLUMNS, chars, row_chars_expr

BATCH_ROWS = 2048  # rows of a config's text read at once (a config per thread)
Counts = np.ndarray  # one int per row


def texts(dtype: pl.DataType, column: str) -> pl.Expr:
    """The text of ``column`` per row, contents joined by newlines (for a tokenizer)."""
    col = pl.col(column)
    if dtype == pl.String:
        return col.fill_null("")
    inner = dtype.inner  # type: ignore[attr-defined]
    element = pl.element() if inner == pl.String else pl.element().struct.field("content")
    return col.list.eval(element.fill_null("")).list.join("\n").fill_null("")


def _row_text(name: str, schema: Mapping[str, pl.DataType]) -> pl.Expr | None:
    """The text a tokenizer counts per row of config ``name``: its text columns joined by
    newlines, the longest (in characters) of a tuple's; None when a column is missing."""
    parts = []
    for item in TEXT_COLUMNS[name]:
        present = [n for n in ((item,) if isinstance(item, str) else item) if n in schema]
        if not present:
            return None
        text, size = texts(schema[present[0]], present[0]), chars(schema[present[0]], present[0])
        for other in present[1:]:
            longer = chars(schema[other], other) > size
            text = pl.when(longer).then(texts(schema[other], other)).otherwise(text)
            size = pl.max_horizontal(size, chars(schema[other], other))
        parts.append(text)
    return pl.concat_str(parts, separator="\n")


@dataclass(frozen=True)
class Lengths:
    """Per training config: every row's characters (and tokens, when counted)."""

    chars: dict[str, Counts]
    tokens: dict[str, Counts] | None  # None: no tokenizer, tokens are chars / 4
    tokenizer: str | None

    def token_counts(self, config: str) -> Counts:
        if self.tokens is not None:
            return self.tokens[config]
        return -(-np.asarray(self.chars[config]) // CHARS_PER_TOKEN)

    def over(self, config: str, limit: int) -> float:
        counts = np.asarray(self.token_counts(config))
        return float((counts > limit).mean()) if len(counts) else 0.0


def _counts(values: Iterable[int] | np.ndarray) -> Counts:
    return np.asarray(values, dtype=np.int32)


def row_chars(name: str, frame: pl.DataFrame) -> Counts:
    expr = row_chars_expr(name, frame.schema)
    return _counts([] if expr is None else frame.select(expr).to_series().to_numpy())


def load_tokenizer(path: Path) -> Callable[[list[str]], list[int]]:
    """A function counting tokens of texts, from a local Hugging Face tokenizer: a
    ``tokenizer.json`` (or a folder holding one) through ``tokenizers``, else any folder
    ``transformers.AutoTokenizer`` reads. Imported only here: they are optional."""
    from builder.errors import require

    file = path / "tokenizer.json" if path.is_dir() else path
    if not path.exists():
        raise TokenizerError(f"--tokenizer {path}: no such file or folder")
    if not (path.is_file() or path.is_dir()):  # a device, a pipe
        raise TokenizerError(f"--tokenizer {path}: neither a tokenizer.json nor a folder")
    if path.is_file() and file.suffix != ".json":
        raise TokenizerError(f"--tokenizer {path}: a file, but not a tokenizer.json")
    if file.is_file() and file.suffix == ".json":
        require("tokenizers", "--tokenizer", "report")
        from tokenizers import Tokenizer

        core = Tokenizer.from_file(str(file))
        return lambda batch: [len(e.ids) for e in core.encode_batch(batch)]
    require("transformers", "--tokenizer (a folder without tokenizer.json)", "report")
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise TokenizerError(f"--tokenizer {path}: not a tokenizer ({exc})") from exc
    return lambda batch: [len(ids) for ids in tokenizer(batch)["input_ids"]]


def measure(
    frames: Iterable[tuple[str, pl.DataFrame | Iterable[pl.DataFrame]]],
    tokenizer: Path | None = None,
    batch: int = 1024,
) -> Lengths:
    """Lengths of every row of each config in ``frames``: (name, its text columns as one
    frame or as batches of rows), one config and one batch at a time."""
    count = load_tokenizer(tokenizer) if tokenizer is not None else None
    characters: dict[str, Counts] = {}
    tokens: dict[str, Counts] = {}
    for name, parts in frames:
        char_parts, token_parts = [_counts([])], [_counts([])]
        for frame in [parts] if isinstance(parts, pl.DataFrame) else parts:
            char_parts.append(row_chars(name, frame))
            if count is not None:
                expr = _row_text(name, frame.schema)
                rows = [] if expr is None else frame.select(expr).to_series().to_list()
                token_parts += [
                    _counts(count(rows[i : i + batch])) for i in range(0, len(rows), batch)
                ]
        characters[name] = np.concatenate(char_parts)
        tokens[name] = np.concatenate(token_parts)
    if count is None or tokenizer is None:
        return Lengths(characters, None, None)
    return Lengths(characters, tokens, tokenizer.name)


def batches(build: BuildFolder, config: str, columns: Sequence[str]) -> Iterable[pl.DataFrame]:
    """``config``'s ``columns``, ``BATCH_ROWS`` rows at a time, file by file."""
    for path in build.files(config):
        with build.reading(path):
            yield from _file_batches(path, columns)


def _file_batches(path: Path, columns: Sequence[str]) -> Iterable[pl.DataFrame]:
    # Not pre-buffered: those buffers stay until the reader closes (a file's text, here).
    source = pq.ParquetFile(path, pre_buffer=False)
    for batch in source.iter_batches(BATCH_ROWS, columns=list(columns)):
        yield pl.from_arrow(batch)  # type: ignore[misc]


def of_build(
    build: BuildFolder,
    tokenizer: Path | None = None,
    memo: Path | None = None,
    counted: Mapping[str, Counts] | None = None,
) -> Lengths:
    """The lengths of every training config of ``build`` that has text columns. Characters
    alone (the card's charts, at the end of every build) are counted a config per thread
    (Parquet decoding and Polars' string lengths release the GIL), and with ``memo`` (a
    folder) a file's counts are kept by its sha256: an incremental rebuild reads only the
    files it wrote. ``counted``: characters per row of data files (by dataset-relative
    path) the build counted as it wrote them, the same numbers: those files are not read."""
    names = [n for n in build.configs("objective") if n in TEXT_COLUMNS]
    if tokenizer is not None:
        return measure(
            ((n, batches(build, n, text_columns(n, build.columns(n)))) for n in names), tokenizer
        )
    kept = Memo.load(memo) if memo is not None else None
    known = counted or {}

    def config_chars(name: str) -> Counts:
        return _config_chars(build, name, kept, known)

    if kept is None and all(
        str(p.relative_to(build.path)) in known for n in names for p in build.files(n)
    ):  # nothing to read: no threads
        chars = [config_chars(name) for name in names]
    else:
        with ThreadPoolExecutor(default_workers(), thread_name_prefix="lengths") as pool:
            chars = list(pool.map(config_chars, names))
    if kept is not None and memo is not None:
        kept.save(memo)
    return Lengths(dict(zip(names, chars, strict=True)), None, None)


@functools.cache
def _code_digest() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


class Memo:
    """Row lengths of data files by key (file digest, config, columns, this code), kept in
    one file: a rebuild of thousands of data files loads one, and keeps only the entries it
    used."""

    FILE = "lengths.npz"

    def __init__(self, entries: dict[str, Counts]) -> None:
        self.entries = entries
        self.used: dict[str, Counts] = {}
        self.lock = threading.Lock()

    @classmethod
    def load(cls, folder: Path) -> Memo:
        # a memo is only a cache: a damaged one (cut short, not a zip) is ignored and rewritten
        with contextlib.suppress(OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            with np.load(folder / cls.FILE, allow_pickle=False) as stored:
                keys, sizes = stored["keys"].tolist(), stored["sizes"].tolist()
                values = _counts(stored["values"])
            ends = np.cumsum([0, *sizes]).tolist()
            if ends[-1] == len(values):
                return cls({k: values[ends[i] : ends[i + 1]] for i, k in enumerate(keys)})
        return cls({})

    def get(self, key: str) -> Counts | None:
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.used[key] = found
            return found

    def put(self, key: str, values: Counts) -> None:
        with self.lock:
            self.used[key] = values

    def save(self, folder: Path) -> None:
        """Write the entries used, unless they are exactly those loaded."""
        if self.used.keys() == self.entries.keys():
            return
        keys = sorted(self.used)
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{self.FILE}.{threading.get_ident()}.tmp"
        with partial.open("wb") as out:
            np.savez(
                out,
                keys=np.array(keys, dtype="<U64"),
                sizes=np.array([len(self.used[k]) for k in keys], dtype=np.int64),
                values=np.concatenate([_counts([]), *(self.used[k] for k in keys)]),
            )
        partial.replace(folder / self.FILE)


def _config_chars(
    build: BuildFolder, name: str, memo: Memo | None, counted: Mapping[str, Counts]
) -> Counts:
    parts = [_counts([])]
    columns: list[str] | None = None  # read from a file's schema only when needed
    for path in build.files(name):
        relative = str(path.relative_to(build.path))
        known = counted.get(relative)
        if known is not None and memo is None:
            parts.append(_counts(known))
            continue
        columns = columns if columns is not None else text_columns(name, build.columns(name))
        digest = build.manifest["files"].get(relative)
        key = None
        if memo is not None and digest:
            material = f"{digest}|{name}|{','.join(columns)}|{_code_digest()}"
            key = hashlib.sha256(material.encode()).hexdigest()
            stored = memo.get(key) if known is None else None
            if stored is not None:
                parts.append(stored)
                continue
        if known is not None:
            values = _counts(known)
        else:
            with build.reading(path):
                counts = [row_chars(name, f) for f in _file_batches(path, columns)]
            values = np.concatenate([_counts([]), *counts])
        if memo is not None and key is not None:
            memo.put(key, values)
        parts.append(values)
    return np.concatenate(parts)


def text_columns(name: str, available: Sequence[str]) -> list[str]:
    """The columns of ``name`` to read for its lengths."""
    wanted = [
        c
        for item in TEXT_COLUMNS.get(name, ())
        for c in ((item,) if isinstance(item, str) else item)
    ]
    return [c for c in wanted if c in available]


def percentiles(
    values: Sequence[int] | Counts, qs: Sequence[float] = (0.5, 0.9, 0.99)
) -> list[int]:
    ordered = np.sort(np.asarray(values))
    if not len(ordered):
        return [0 for _ in qs]
    return [int(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) for q in qs]


def summary(lengths: Lengths, config: str) -> dict[str, Any]:
    values = np.asarray(lengths.chars[config])
    p50, p90, p99 = percentiles(values)
    return {
        "rows": len(values),
        "chars_p50": p50,
        "chars_p90": p90,
        "chars_p99": p99,
        "chars_max": int(values.max()) if len(values) else 0,
        "over": {limit: lengths.over(config, limit) for limit in CONTEXT_LIMITS},
    }
