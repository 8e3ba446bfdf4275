"""Read a build folder: its manifest, the Parquet files the manifest lists, its rejects file.

Nothing else is read (no config, no inputs), so a report can be made of any copy of a build.
Every way the folder can be incomplete is a :class:`BuildFolderError` naming what is missing.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from builder.fs.storage import file_sha256
from builder.report.errors import BuildFolderError, RejectsFileError
from schemas import manifest as manifest_file
from schemas.manifest import MANIFEST, Manifest, ManifestError

# Keys a report reads; a manifest without one of them is from an older builder.
REQUIRED_KEYS = (
    "builder_version",
    "inputs",
    "configs",
    "files",
    "rejects",
    "checks",
    "training_exclusions",
    "splits",
)
EXAMPLES_PER_KIND = 3
RAW_CHARS = 600  # of a rejected line shown in the report


def default_rejects(folder: Path) -> Path:
    """Where a build puts its rejects file by default: beside the dataset folder."""
    return folder.parent / "rejects.jsonl"


def recorded_rejects(folder: Path, manifest: Mapping[str, Any]) -> Path | None:
    """The rejects file the build recorded in its manifest (relative to the folder)."""
    recorded = (manifest.get("rejects") or {}).get("file")
    return Path(os.path.normpath(folder / recorded)) if isinstance(recorded, str) else None


def check_recorded_rejects(path: Path, manifest: Mapping[str, Any], named: bool) -> None:
    """A rejects file that is not the build's says so in one line: moved (only when the
    manifest named it) or changed since (its sha256 is not the one recorded)."""
    recorded = manifest.get("rejects") or {}
    expected = recorded.get("sha256")
    if not isinstance(expected, str):
        return
    if not path.is_file():
        if not named and recorded.get("total"):  # with no rejects, nothing is missing
            raise RejectsFileError(
                f"{path}: the rejects file this build wrote is not there (moved or deleted?)"
            )
        return
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise RejectsFileError(
            f"{path} is not this build's rejects file (its sha256 is not the one the manifest "
            "records: changed since the build?)"
        )


def rejects_note(folder: Path, manifest: Mapping[str, Any]) -> str | None:
    """One line on the rejects file the manifest records (None: it records none): where it
    is, or that it moved or changed since the build."""
    path = recorded_rejects(folder, manifest)
    if path is None:
        return None
    total = (manifest.get("rejects") or {}).get("total", 0)
    if not path.is_file() and not total:
        return None  # with no rejects, nothing is missing
    try:
        check_recorded_rejects(path, manifest, named=False)
    except RejectsFileError as exc:
        return f"rejects file: {exc}"
    return f"rejects file: {path} ({total} rejects, as the build wrote it)"


def load_manifest(folder: Path) -> Manifest:
    """``folder``'s manifest, checked for the keys a report needs."""
    if not folder.exists():
        raise BuildFolderError(f"{folder}: no such build folder")
    if not folder.is_dir():
        raise BuildFolderError(f"{folder}: not a folder, so no build folder")
    path = folder / MANIFEST
    if not path.is_file():
        raise BuildFolderError(f"{folder}: no {MANIFEST} (not a build folder, or unfinished)")
    return read_manifest(path)


def read_manifest(path: Path) -> Manifest:
    """A manifest file, checked for the keys a report needs."""
    try:
        manifest = manifest_file.read_manifest(path)
    except ManifestError as exc:
        if exc.problem == "not_an_object":
            raise BuildFolderError(f"{path}: not a JSON object") from exc
        raise BuildFolderError(f"{path}: unreadable ({exc.detail})") from exc
    missing = [k for k in REQUIRED_KEYS if k not in manifest]
    if missing:
        version = manifest.get("builder_version", "unknown")
        raise BuildFolderError(
            f"{path} is from an older builder (version {version}): it has no "
            + ", ".join(repr(k) for k in missing)
        )
    return manifest


@dataclass(frozen=True)
class RejectExample:
    source_file: str
    line: int | None
    key: str | None
    path: str
    message: str
    raw: str  # the start of the raw line, as text


@dataclass
class Rejects:
    path: Path | None
    by_kind: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[RejectExample]] = field(default_factory=dict)


def _raw_text(record: Mapping[str, Any]) -> str:
    raw = record.get("raw")
    encoded = record.get("raw_base64")
    if raw is None and isinstance(encoded, str):  # not UTF-8: shown with U+FFFD for bad bytes
        try:
            line = base64.b64decode(encoded, validate=True)
        except ValueError:
            line = b""
        note = f"[not UTF-8: {len(line):,} bytes; raw_base64 in the rejects file]\n"
        raw = note + line.decode("utf-8", errors="replace")
    text = raw if isinstance(raw, str) else json.dumps(raw)
    if len(text) > RAW_CHARS:
        text = text[:RAW_CHARS] + f"…[{len(text) - RAW_CHARS} more characters]"
    return text


def read_rejects(path: Path | None, expected: Mapping[str, int]) -> Rejects:
    """The rejects file's counts by kind and the first few of each kind. It must agree with
    the manifest's ``rejects.by_kind`` (``expected``): a stale file would mislead."""
    total = sum(expected.values())
    if path is None or not path.is_file():
        if total:
            where = "no rejects file given" if path is None else f"{path}: no such file"
            raise RejectsFileError(f"{where}, and the manifest counts {total} rejects")
        return Rejects(None)
    rejects = Rejects(path)
    try:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    kind = str(record["kind"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise RejectsFileError(f"{path}:{number}: not a rejects record") from exc
                rejects.by_kind[kind] += 1
                examples = rejects.examples.setdefault(kind, [])
                if len(examples) < EXAMPLES_PER_KIND:
                    errors = record.get("errors") or [{}]
                    examples.append(
                        RejectExample(
                            str(record.get("source_file", "")),
                            record.get("line"),
                            record.get("key"),
                            str(record.get("path") or errors[0].get("path") or "$"),
                            str(record.get("message", "")),
                            _raw_text(record),
                        )
                    )
    except OSError as exc:
        raise RejectsFileError(f"{path}: unreadable ({exc.strerror})") from exc
    found = {k: n for k, n in rejects.by_kind.items() if n}
    wanted = {k: n for k, n in expected.items() if n}
    if found != wanted:
        raise RejectsFileError(
            f"{path} is not this build's rejects file: it has {sum(found.values())} rejects "
            f"{dict(sorted(found.items()))}, the manifest {total} {dict(sorted(wanted.items()))}"
        )
    return rejects


class BuildFolder:
    """A finished build: the manifest, and the Parquet files of each config it lists."""

    def __init__(
        self, folder: Path, rejects: Path | None = None, manifest: dict[str, Any] | None = None
    ) -> None:
        """``manifest``: the one being written (a build's card charts), else the folder's."""
        self.path = folder
        self.manifest = manifest if manifest is not None else load_manifest(folder)
        files = self.manifest["files"]
        if not isinstance(files, dict):
            raise BuildFolderError(f"{folder / MANIFEST}: 'files' is not a mapping")
        missing = sorted(p for p in files if not (folder / p).is_file())
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise BuildFolderError(
                f"{folder}: {missing[0]}{more}, listed in {MANIFEST}, is missing"
            )
        recorded = recorded_rejects(folder, self.manifest)
        self.rejects_path = rejects or recorded or default_rejects(folder)
        self._named = rejects is None and recorded is not None
        self._rejects: Rejects | None = None

    @property
    def rejects(self) -> Rejects:
        if self._rejects is None:
            check_recorded_rejects(self.rejects_path, self.manifest, named=not self._named)
            by_kind = self.manifest["rejects"].get("by_kind") or {}
            self._rejects = read_rejects(self.rejects_path, by_kind)
        return self._rejects

    def configs(self, kind: str | None = None) -> list[str]:
        """Config names in manifest order (``kind``: ``objective`` or ``table``)."""
        return [
            name
            for name, meta in self.manifest["configs"].items()
            if kind is None or meta.get("kind") == kind
        ]

    def files(self, config: str, split: str | None = None) -> list[Path]:
        """``config``'s Parquet files (of one ``split``), in manifest order."""
        prefix = f"{config}/" + (f"{split}-" if split else "")
        return [
            self.path / p
            for p in self.manifest["files"]
            if p.startswith(prefix) and p.endswith(".parquet")
        ]

    @contextlib.contextmanager
    def reading(self, path: Path) -> Iterator[None]:
        """A data file that cannot be read is one line naming it, and saying whether its
        bytes are still those the manifest records (a file cut short or replaced since the
        build is not)."""
        try:
            yield
        except (pl.exceptions.PolarsError, pa.ArrowException) as exc:
            rel = path.relative_to(self.path).as_posix()
            recorded = self.manifest["files"].get(rel)
            if recorded is not None and file_sha256(path) != recorded:
                said = f"changed since the build (its sha256 is not the one {MANIFEST} records)"
            else:
                said = f"cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]})"
            raise BuildFolderError(f"{self.path}: {rel}: {said}") from exc

    def columns(self, config: str) -> list[str]:
        files = self.files(config)
        if not files:
            return []
        with self.reading(files[0]):
            return pq.read_schema(files[0]).names

    def read(
        self, config: str, columns: Sequence[str] | None = None, split: bool = False
    ) -> pl.DataFrame:
        """``config``'s rows (only ``columns``), with a ``split`` column when asked; an empty
        frame when the config has no files."""
        files = self.files(config)
        if files and not split:
            # One read of every file, in parallel (a build has hundreds); per file if the
            # files of an older build differ in schema.
            with contextlib.suppress(pl.exceptions.PolarsError):
                return pl.read_parquet(files, columns=list(columns) if columns else None)
        frames = []
        for path in files:
            with self.reading(path):
                frame = pl.read_parquet(path, columns=list(columns) if columns else None)
            if split:
                frame = frame.with_columns(pl.lit(path.name.split("-", 1)[0]).alias("split"))
            frames.append(frame)
        if not frames:
            return pl.DataFrame()
        return pl.concat(frames, how="vertical_relaxed")

    def head(self, config: str, n: int) -> list[dict[str, Any]]:
        """The first ``n`` rows of ``config``'s train split (else any split), as dicts."""
        files = self.files(config, "train") or self.files(config)
        rows: list[dict[str, Any]] = []
        for path in files:
            if len(rows) >= n:
                break
            with self.reading(path):
                table = pq.ParquetFile(path).read_row_group(0)
            rows += table.slice(0, n - len(rows)).to_pylist()
        return rows
