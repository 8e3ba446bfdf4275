"""Incremental rebuilds: the normalized output of each episode file, cached by its digest.

This is the second level of the cache. The first (``builder.segments``) skips the leading
segments whose chained keys are stored, files and all; the batches below serve the files
from the first changed segment on (an edited or inserted file moves every later segment).

What is cached is the pure, per-file part of the ingest: the batches ``normalize_batch``
returns (one entry of record batches per input batch, ``builder.engine.codec``), plus the
file's blank-line count and stats. The build-wide, order-dependent commit (duplicate ids,
first-source-wins questions, ground truth, ``--strict``) is *not* cached: a rebuild replays
it over the cached batches in input order, exactly as a clean build runs it over fresh ones,
so the staging tables, rejects, manifest and dataset are byte-identical to a clean build
(``tests/builder/test_incremental.py``).

Layout of ``cache_dir``::

    index.json              path -> {stat fields, sha256, recorded_ns}   (the stat memo)
    entries/<key>/          one input file's batches, key below
        meta.json           written last: path, sha256, bytes, lines, blank, batches, files
        outcomes.arrow ...  Arrow IPC files (lz4), one record batch per input batch
    entries/.tmp-<pid>-*    an entry being written; renamed to entries/<key> when complete
    segments/               stored segments (``builder.segments``)
    card.json               the card's YAML, remembered (``builder.export.card``)
    .lock                   one build uses a cache at a time (a second one builds uncached)

**Key.** ``sha256`` of: the file's sha256 (of its stored bytes), its path as named in the
config (the path is in every row and reject), the builder and schema versions, a digest of
the source of every project module the ingest imports (so an edited normalizer never
replays stale rows, even without a version bump), the versions of pydantic, msgspec,
orjson and pyarrow, and every option that changes the per-file output (``hook_value_limit``,
``max_line_bytes``, ``batch_lines``, the batch byte limit).

**Finding a file's digest without reading it twice.** ``index.json`` remembers, per path,
the file's (device, inode, size, mtime_ns, ctime_ns) and the sha256 computed while it was
last read (an object-store input, ``builder.storage.Stat``: its size and mtime; objects are
replaced whole). A file whose stat is unchanged is trusted to have that digest and is not read at
all, unless it was *racy* when recorded: its mtime or ctime was less than ``RACY_NS`` (2 s,
the coarsest common file-system timestamp granularity) before the moment we stat'ed it, in
which case a later write in the same timestamp tick could leave the stat unchanged (git's
"racy clean" rule). ctime cannot be set from user space, so resetting the mtime after an
edit (``touch -d``, ``rsync -t``) still changes the stat. A file that is not trusted is
hashed first (one sequential read, no parsing) *only if* its size equals the size recorded
for that path — the only case in which its entry can still be valid; any other file is a
miss for sure and is normalized directly, its digest computed while reading as always. So a
new or grown file is read once, an unchanged file zero times (or once, hashing only, when
racy), and ``cache_verify = true`` hashes every file regardless of the memo.

**Safety.** An entry is written into a temporary folder and renamed into place only when
complete, ``meta.json`` last; before replay every file of the entry is checked against the
size and sha256 in ``meta.json``, its IPC footer and batch count. Anything that does not
fit (a killed build, a truncated or edited file) makes the entry a miss: it is deleted and
rebuilt. Replay then streams one batch at a time (memory-mapped), so memory does not grow
with the input. Lines a replay rejects late (a duplicate id, a ``--strict`` check) need
their raw text, which the cache does not hold: it is read from the input in one forward
pass, only when such a reject occurs, and the file's digest is checked again at its end.

**Eviction.** After a successful ingest every entry the build did not use (hit or wrote) is
deleted, along with temporary folders of processes that are no longer running, and the
memo keeps only the files of this build. So the cache holds exactly the last build's inputs
(≈ the compressed size of their normalized tables); give different builds different cache
folders.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from builder import segments, storage
from builder.engine.codec import (
    BATCH_SCHEMAS,
    BatchResult,
    batch_from_record_batches,
    batch_to_record_batches,
)
from builder.errors import EnvironmentProblem
from builder.ingest import (
    BANK_SEGMENT,
    BATCH_BYTES,
    FileCounts,
    Ingest,
    bank_paths,
)
from builder.normalize import EpisodeInfo
from builder.sources import InputError, InputFile, InputStats, SourceLine
from builder.validate import Reject

FORMAT = 1
RACY_NS = 2_000_000_000
# lz4: as fast to replay as uncompressed IPC once the sha256 check is counted, ≈ 3× smaller
IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")
_LIBRARIES = ("pydantic", "pydantic_core", "msgspec", "orjson", "pyarrow")
_ROOTS = ("builder", "schemas")
_STAT_FIELDS = ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")


class CacheError(EnvironmentProblem, RuntimeError):
    """A cache entry failed in the middle of a replay (it has been deleted: build again)."""


_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)|import[ \t]+([^\n#]+))",
    re.M,
)


@functools.cache
def code_digest() -> str:
    """sha256 over the source of every project module ``builder.ingest`` (and this module)
    imports, transitively: the code that decides what a cached batch holds. Imports are
    found by a pattern, not a parse (≈25× faster); one seen in a string or comment only
    adds a module to the digest, which errs on the safe side."""
    root = Path(__file__).resolve().parent.parent
    todo = ["builder.ingest", "builder.cache", "builder.engine.codec"]
    files: dict[str, bytes] = {}
    while todo:
        name = todo.pop()
        if name in files or name.split(".")[0] not in _ROOTS:
            continue
        base = root.joinpath(*name.split("."))
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if not path.is_file():
            continue
        files[name] = source = path.read_bytes()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for module, names, plain in _IMPORT.findall(source):
            if plain:
                todo += [m.split()[0] for m in plain.decode().split(",") if m.strip()]
                continue
            module = module.decode()
            level = len(module) - len(module.lstrip("."))
            module = module.lstrip(".")
            if level:
                parent = package.rsplit(".", level - 1)[0] if level > 1 else package
                module = f"{parent}.{module}" if module else parent
            todo.append(module)
            todo += [module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)]
            for item in names.decode().strip("()").split(","):
                if item.split():
                    todo.append(f"{module}.{item.split()[0]}")
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    from builder import __version__
    from schemas.episode import SCHEMA_VERSION

    versions = {"builder": __version__, "schema": SCHEMA_VERSION, "code": code_digest()}
    for name in _LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "?"
    return versions


def options(config: Any) -> dict[str, Any]:
    """Every setting that changes what ``normalize_batch`` returns for a file."""
    return {
        "hook_value_limit": config.hook_value_limit,
        "hash_precision": config.hash_precision,
        "max_line_bytes": config.max_line_bytes,
        "batch_lines": config.batch_lines,
        "batch_bytes": BATCH_BYTES,
    }


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with storage.open_input(path) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _stat_key(st: storage.Stat) -> list[int]:
    return [getattr(st, name) for name in _STAT_FIELDS]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Entry:
    """A complete, verified cache entry of one input file."""

    directory: Path
    meta: dict[str, Any]

    @property
    def stats(self) -> InputStats:
        m = self.meta
        return InputStats(m["path"], m["sha256"], m["bytes"], m["lines"])

    def batches(self) -> Iterator[BatchResult]:
        readers = {}
        with contextlib.ExitStack() as stack:
            for name in BATCH_SCHEMAS:
                source = stack.enter_context(pa.memory_map(str(self.directory / f"{name}.arrow")))
                readers[name] = pa.ipc.open_file(source)
            for i in range(self.meta["batches"]):
                batches = {name: reader.get_batch(i) for name, reader in readers.items()}
                yield batch_from_record_batches(batches)  # type: ignore[misc]


class EntryWriter:
    """Writes one input file's batches into a temporary folder; ``finish`` renames it."""

    def __init__(self, cache: IngestCache, path: str) -> None:
        self.cache, self.path = cache, path
        self.tmp = cache.entries / f".tmp-{os.getpid()}-{time.time_ns()}"
        self.tmp.mkdir(parents=True)
        self.batches = 0
        self._writers = {
            name: pa.ipc.new_file(str(self.tmp / f"{name}.arrow"), schema, options=IPC_OPTIONS)
            for name, schema in BATCH_SCHEMAS.items()
        }

    def add(self, batch: BatchResult) -> None:
        for name, record_batch in batch_to_record_batches(batch).items():
            self._writers[name].write_batch(record_batch)
        self.batches += 1

    def finish(self, stats: InputStats, blank: int) -> str:
        for writer in self._writers.values():
            writer.close()
        files = {}
        for name in BATCH_SCHEMAS:
            path = self.tmp / f"{name}.arrow"
            files[name] = {"bytes": path.stat().st_size, "sha256": _file_sha256(str(path))}
        key = self.cache.key(self.path, stats.sha256)
        meta = {
            "format": FORMAT,
            "key": key,
            "path": self.path,
            "sha256": stats.sha256,
            "bytes": stats.bytes,
            "lines": stats.lines,
            "blank": blank,
            "batches": self.batches,
            "files": files,
            "versions": self.cache.versions,
            "options": self.cache.options,
        }
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        target = self.cache.entries / key
        if target.exists():  # a damaged or concurrent copy: ours is complete
            shutil.rmtree(target, ignore_errors=True)
        self.tmp.rename(target)
        return key

    def abort(self) -> None:
        for writer in self._writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class IngestCache:
    """The cache folder of one build: lookups, new entries, the stat memo, eviction."""

    def __init__(self, directory: Path, config: Any) -> None:
        self.directory = Path(directory)
        self.entries = self.directory / "entries"
        self.entries.mkdir(parents=True, exist_ok=True)
        self.verify = bool(getattr(config, "cache_verify", False))
        self.versions = _versions()
        self.options = options(config)
        self.used: set[str] = set()
        self.memo: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0
        self.segments = segments.SegmentCache(self.directory / "segments", self.verify)
        self._lock: Any = None
        self._old_memo = self._load_index()

    # -- lifecycle ---------------------------------------------------------------------
    def acquire(self) -> bool:
        """Take the cache's lock; False when another build holds it."""
        handle = open(self.directory / ".lock", "a+")  # noqa: SIM115 - closed in close()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._lock = handle
        return True

    def close(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def ingest_job(
        self,
        config: Any,
        sink: Any,
        rejects: Any,
        on_bytes: Callable[[int], None] | None,
        engine: Any,
    ) -> CachedIngest:
        """The ingest (``builder.ingest.Ingest``) with this cache around it: files it holds
        are replayed, the others normalized and stored."""
        return CachedIngest(config, sink, rejects, on_bytes, engine, cache=self)

    def finish(self) -> None:
        """After a successful ingest: keep only this build's entries; save the memo."""
        for child in self.entries.iterdir():
            if child.name.startswith(".tmp-"):
                pid = child.name.split("-")[1]
                if pid.isdigit() and int(pid) != os.getpid() and _pid_alive(int(pid)):
                    continue
                shutil.rmtree(child, ignore_errors=True)
            elif child.name not in self.used:
                shutil.rmtree(child, ignore_errors=True)
        index = {"format": FORMAT, "files": self.memo}
        tmp = self.directory / f".index.json.{os.getpid()}"
        tmp.write_text(json.dumps(index, indent=1, sort_keys=True))
        tmp.replace(self.directory / "index.json")

    def _load_index(self) -> dict[str, dict[str, Any]]:
        try:
            index = json.loads((self.directory / "index.json").read_text())
            if index.get("format") == FORMAT and isinstance(index.get("files"), dict):
                return index["files"]
        except (OSError, ValueError, AttributeError):
            pass
        return {}

    # -- keys and lookups --------------------------------------------------------------
    def key(self, path: str, sha256: str) -> str:
        material = {
            "format": FORMAT,
            "path": path,
            "sha256": sha256,
            "versions": self.versions,
            "options": self.options,
        }
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()

    def known_digest(self, path: str, st: storage.Stat) -> tuple[str | None, bool]:
        """(the file's sha256 when it can be known cheaply, else None: a certain miss;
        whether it came from the memo without reading the file)."""
        record = self._old_memo.get(path)
        if not isinstance(record, dict):
            return None, False
        try:
            same = record["stat"] == _stat_key(st)
            racy = max(st.st_mtime_ns, st.st_ctime_ns) + RACY_NS >= record["recorded_ns"]
            if same and not racy and not self.verify:
                return str(record["sha256"]), True
            if record["stat"][2] != st.st_size:
                return None, False  # another size: other content, so no entry can match
        except (KeyError, IndexError, TypeError):
            return None, False
        return _file_sha256(path), False

    def entry(self, path: str, sha256: str) -> Entry | None:
        """The verified entry for this content, or None (a damaged one is deleted)."""
        key = self.key(path, sha256)
        directory = self.entries / key
        if not directory.is_dir():
            return None
        try:
            meta = json.loads((directory / "meta.json").read_text())
            if meta["format"] != FORMAT or meta["key"] != key or meta["sha256"] != sha256:
                raise ValueError("meta.json does not match")
            if meta["path"] != path or set(meta["files"]) != set(BATCH_SCHEMAS):
                raise ValueError("meta.json does not match")
            for name, expected in meta["files"].items():
                file = directory / f"{name}.arrow"
                if file.stat().st_size != expected["bytes"]:
                    raise ValueError(f"{file}: wrong size")
                if _file_sha256(str(file)) != expected["sha256"]:
                    raise ValueError(f"{file}: wrong digest")
                with pa.memory_map(str(file)) as source:
                    reader = pa.ipc.open_file(source)
                    if reader.num_record_batches != meta["batches"]:
                        raise ValueError(f"{file}: wrong number of batches")
                    if not reader.schema.equals(BATCH_SCHEMAS[name]):
                        raise ValueError(f"{file}: wrong schema")
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
            shutil.rmtree(directory, ignore_errors=True)
            return None
        return Entry(directory, meta)

    def remember(self, path: str, before: storage.Stat, sha256: str, recorded_ns: int) -> None:
        """Memo the file's digest, unless it changed while it was read."""
        try:
            after = storage.stat(path)
        except OSError:
            return
        if _stat_key(after) == _stat_key(before):
            self.memo[path] = {
                "stat": _stat_key(before),
                "sha256": sha256,
                "recorded_ns": recorded_ns,
            }

    def keep(self, path: str) -> None:
        """Carry a trusted memo record over to the next build."""
        self.memo[path] = self._old_memo[path]

    def writer(self, path: str) -> EntryWriter:
        return EntryWriter(self, path)

    def drop(self, entry: Entry) -> None:
        shutil.rmtree(entry.directory, ignore_errors=True)


class _RawLines:
    """The raw text of given line numbers of an input, read forward, only when asked."""

    def __init__(self, path: str, max_line_bytes: int, sha256: str) -> None:
        self.path, self.max_line_bytes, self.sha256 = path, max_line_bytes, sha256
        self._source: InputFile | None = None
        self._lines: Iterator[SourceLine] | None = None

    def get(self, number: int) -> bytes:
        if self._lines is None:
            self._source = InputFile(self.path, self.max_line_bytes)
            self._lines = self._source.lines()
        for line in self._lines:
            if line.number == number:
                return line.raw
            if line.number > number:
                break
        raise InputError(f"{self.path}: line {number} not found; did the file change?")

    def close(self) -> None:
        """Read to the end and check the digest is still the one the cache was keyed by."""
        if self._lines is None or self._source is None:
            return
        for _ in self._lines:
            pass
        if self._source.stats.sha256 != self.sha256:
            raise InputError(f"{self.path}: changed during the build; build again")


@dataclass
class _FillRaw:
    """Forwards rejects, filling in the raw text of lines the cache did not keep."""

    target: Any
    raws: _RawLines

    def add(self, reject: Reject) -> None:
        if reject.raw is None:
            reject = replace(reject, raw=self.raws.get(reject.line))  # type: ignore[arg-type]
        self.target.add(reject)


@dataclass
class CachedIngest(Ingest):
    """``Ingest`` whose episode files come from the cache when their digest is known, and
    whose leading segments are not read at all while they are stored (``builder.segments``)."""

    cache: IngestCache | None = None
    _writer: EntryWriter | None = field(default=None, init=False, repr=False)
    _previous: str = field(default="", init=False, repr=False)
    _reusing: bool = field(default=True, init=False, repr=False)

    def _segment(self, name: str, read: Callable[[], None]) -> None:
        cache = self.cache
        assert cache is not None
        if not self._previous:
            self._previous = segments.base_key(self.config, cache.versions)
        if self._reusing:
            key = self._stored_key(name)
            found = cache.segments.restorable(key) if key else None
            if found is not None:
                stored, delta = found
                segments.restore(self, name, delta)
                cache.segments.reused[name] = stored
                self._previous = key  # type: ignore[assignment]
                return
            self._reusing = False
        since = segments.mark(self)
        super()._segment(name, read)
        key = segments.chain(self._previous, name, self._material(name))
        cache.segments.begin(name, key, segments.delta(self, since))
        self._previous = key

    def _material(self, name: str) -> Any:
        """What identifies a segment's input, once read: the question banks' paths and
        digests, or the episode file's cache key."""
        digests = {s.path: s.sha256 for s in self.result.inputs}
        if name == BANK_SEGMENT:
            return _bank_material(self.config, digests.__getitem__)
        path = self.config.episodes[int(name) - 1]
        assert self.cache is not None
        return self.cache.key(path, digests[path])

    def _stored_key(self, name: str) -> str | None:
        """The segment's key before reading it, when its input's digest can be known
        without a parse (banks: hashed; episode files: ``known_digest``); else None."""
        cache = self.cache
        assert cache is not None
        try:
            if name == BANK_SEGMENT:
                hashed = _bank_material(self.config, _file_sha256)
                return segments.chain(self._previous, name, hashed)
            path = self.config.episodes[int(name) - 1]
            before = storage.stat(path)
        except OSError:
            return None
        recorded_ns = time.time_ns()
        digest, trusted = cache.known_digest(path, before)
        if digest is None:
            return None
        entry = cache.key(path, digest)
        key = segments.chain(self._previous, name, entry)
        if (cache.segments.directory / key).is_dir():
            # The memo and the file's normalized batches stay for the next build.
            if trusted:
                cache.keep(path)
            else:
                cache.remember(path, before, digest, recorded_ns)
            if (cache.entries / entry).is_dir():
                cache.used.add(entry)
        return key

    def _read_episodes(self, path: str) -> None:
        cache = self.cache
        assert cache is not None
        try:
            before = storage.stat(path)
        except OSError:
            return super()._read_episodes(path)  # reports the missing file as usual
        recorded_ns = time.time_ns()
        digest, trusted = cache.known_digest(path, before)
        entry = cache.entry(path, digest) if digest is not None else None
        if entry is not None:
            cache.hits += 1
            self._replay(path, entry)
            cache.used.add(entry.directory.name)
            if trusted:
                cache.keep(path)
            else:
                cache.remember(path, before, entry.meta["sha256"], recorded_ns)
            return
        cache.misses += 1
        self._writer = cache.writer(path)
        try:
            super()._read_episodes(path)
            stats = self.result.inputs[-1]
            key = self._writer.finish(stats, self.result.counts[path].blank)
        except BaseException:
            self._writer.abort()
            raise
        finally:
            self._writer = None
        cache.used.add(key)
        cache.remember(path, before, stats.sha256, recorded_ns)

    def _commit(self, lines: list[SourceLine], batch: BatchResult, counts: FileCounts) -> None:
        if self._writer is not None:
            self._writer.add(batch)
        super()._commit(lines, batch, counts)

    def _replay(self, path: str, entry: Entry) -> None:
        """The commit over the cached batches, in input order: what a clean build does."""
        assert self.cache is not None
        stats = entry.stats
        _, counts = self._start(path, "episodes")
        counts.blank += entry.meta["blank"]
        raws = _RawLines(path, self.config.max_line_bytes, stats.sha256)
        rejects = self.rejects
        self.rejects = _FillRaw(rejects, raws)  # type: ignore[assignment]
        try:
            for batch in entry.batches():
                lines = [
                    SourceLine(path, o.number if isinstance(o, EpisodeInfo) else o.line, None)  # type: ignore[arg-type]
                    for o in batch.outcomes
                ]
                self._commit(lines, batch, counts)
        except InputError:
            raise  # the input changed under the build, not the cache
        except (OSError, ValueError, pa.ArrowException) as exc:
            self.cache.drop(entry)
            raise CacheError(f"cache entry for {path} is damaged ({exc}); build again") from exc
        finally:
            self.rejects = rejects
        raws.close()
        if self.on_bytes is not None:
            self.on_bytes(stats.bytes)
        self.result.inputs.append(stats)


def _bank_material(config: Any, digest: Callable[[str], str]) -> dict[str, Any]:
    """The question banks of a build, by source: (path, sha256) in reading order."""
    return {kind: [(p, digest(p)) for p in paths] for kind, paths in bank_paths(config)}


def open_cache(config: Any) -> IngestCache | None:
    """The cache named by ``config.cache_dir``, locked for this build; None when no cache
    is configured or another build is using it (this build then runs uncached)."""
    directory = getattr(config, "cache_dir", None)
    if not directory:
        return None
    cache = IngestCache(Path(directory), config)
    return cache if cache.acquire() else None
