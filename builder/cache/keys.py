"""What the cache's keys cover: one place for every input of a cached result.

Two kinds of key:

* an **entry key** (``entry_key``): one episode file's normalized batches. It covers the
  file's content and its path as named in the config (the path is in every row and reject),
  the builder and schema versions, a digest of the source of every project module the ingest
  imports (``code_digest``: an edited normalizer never replays stale rows, even without a
  version bump), the versions of the ingest's libraries, and every option that changes what
  the ingest returns for a file (``file_options``);
* a **segment key** (``chain``): ``sha256(key(k - 1), segment k's name, its input)``, chained
  from ``base_key``, which covers the whole project's source, the library versions (polars
  too: it derives every config) and every option that changes a segment's files, but not the
  list of episode files, so appending one leaves the keys before it as they were. It covers
  the eval sets by content (``eval_material``): an eval item added to the same file removes
  rows from segments built before it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from builder.config import RUN_OPTIONS
from builder.derive.decontamination.evals import eval_files, parse_eval_spec
from builder.fs import storage
from builder.ingest.files import BATCH_BYTES
from builder.ingest.staging import bank_paths
from builder.sources.inputs import cannot_open

ENTRY_FORMAT = 1
# 2: a segment is a run of episode files; 3: files known by size and mtime; 4: first_seen
# keeps each record's place in its document
SEGMENT_FORMAT = 4
_LIBRARIES = ("pydantic", "pydantic_core", "msgspec", "orjson", "pyarrow")
_ROOTS = ("builder", "schemas")
# The modules whose code decides what a cached batch holds, and what they import.
_INGEST_MODULES = ("builder.ingest.files", "builder.ingest.codec", "builder.cache.cached_ingest")
# Options that do not change any segment's files (inputs are keyed one by one).
SEGMENT_INDEPENDENT = RUN_OPTIONS | {
    "episodes",
    "segments",  # each segment's key names its files
    "segment_bytes",
    "synthetic_questions",
    "llm_questions",
    "sessions",
    "null_correct_trains",  # sessions only: their segment is always built
    "out",
    "upload_to",
    "rejects",
    "max_reject_ratio",
    "publish_repo",
    "publish_private",
    "card",
    "config_path",
}

_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)|import[ \t]+([^\n#]+))",
    re.M,
)
_ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def code_digest() -> str:
    """sha256 over the source of every project module the ingest and the cache's replay
    import, transitively: the code that decides what a cached batch holds. Imports are
    found by a pattern, not a parse (≈25× faster); one seen in a string or comment only
    adds a module to the digest, which errs on the safe side."""
    todo = list(_INGEST_MODULES)
    files: dict[str, bytes] = {}
    while todo:
        name = todo.pop()
        if name in files or name.split(".")[0] not in _ROOTS:
            continue
        base = _ROOT.joinpath(*name.split("."))
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


@functools.cache
def project_digest() -> str:
    """sha256 over the source of every module of ``builder`` and ``schemas``: what a
    segment's files are made by."""
    digest = hashlib.sha256()
    for package in _ROOTS:
        for path in sorted((_ROOT / package).rglob("*.py")):
            digest.update(str(path.relative_to(_ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def versions() -> dict[str, str]:
    """The builder's, the schema's and the ingest's libraries' versions, and ``code_digest``."""
    from builder import __version__
    from schemas.episode import SCHEMA_VERSION

    found = {"builder": __version__, "schema": SCHEMA_VERSION, "code": code_digest()}
    for name in _LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "?"
    return found


def file_options(config: Any) -> dict[str, Any]:
    """Every setting that changes what ``normalize_batch`` returns for a file."""
    return {
        "hook_value_limit": config.hook_value_limit,
        "hash_precision": config.hash_precision,
        "answer_tolerance": config.answer_tolerance,
        "max_line_bytes": config.max_line_bytes,
        "batch_lines": config.batch_lines,
        "batch_bytes": BATCH_BYTES,
    }


def entry_key(path: str, sha256: str, versions: dict[str, str], options: dict[str, Any]) -> str:
    """The key of one episode file's cache entry."""
    material = {
        "format": ENTRY_FORMAT,
        "path": path,
        "sha256": sha256,
        "versions": versions,
        "options": options,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def base_key(config: Any, versions: dict[str, str]) -> str:
    """What every segment's key starts from."""
    fields = dataclasses.fields(config) if dataclasses.is_dataclass(config) else ()
    options = {f.name: getattr(config, f.name) for f in fields if f.name not in SEGMENT_INDEPENDENT}
    # polars derives every config; the ingest's libraries are in ``versions`` already
    libraries = {**versions, "polars": importlib.metadata.version("polars")}
    material = {
        "format": SEGMENT_FORMAT,
        "code": project_digest(),
        "versions": libraries,
        "options": options,
        "evals": eval_material(getattr(config, "decontamination_evals", ())),
    }
    return _sha256(material)


def eval_material(specs: tuple[str, ...]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each eval set as given and the sha256 of every file read for it (a dataset folder's
    files): the items decide which rows leave the training configs, the path alone does not."""
    material = []
    for spec in specs:
        file, _ = parse_eval_spec(spec)
        material.append((spec, [(str(p), file_sha256(str(p))) for p in eval_files(Path(file))]))
    return material


def chain(previous: str, name: str, material: Any) -> str:
    """A segment's key: the previous segment's, its name and what identifies its input."""
    return _sha256({"previous": previous, "segment": name, "input": material})


def bank_material(config: Any, digest: Callable[[str], str]) -> dict[str, Any]:
    """The question banks of a build, by source: (path, sha256) in reading order."""
    return {kind: [(p, digest(p)) for p in paths] for kind, paths in bank_paths(config)}


def file_sha256(path: str) -> str:
    """sha256 of a file's stored bytes: every file digest the cache takes goes through here."""
    return storage.file_sha256(path)


def input_sha256(path: str) -> str:
    """``file_sha256`` of an input: one it cannot open is the input's error, as when the
    build reads it without a cache (``builder.sources``), not the cache's."""
    try:
        return file_sha256(path)
    except (storage.StorageError, storage.UnknownStorage):
        raise
    except OSError as exc:
        raise cannot_open(path, exc) from exc


def _sha256(material: Any) -> str:
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
