"""Build configuration: built-in defaults, overridden by ``dataset.toml``, overridden by flags.

Relative paths in ``dataset.toml`` are relative to the file's folder, so ``--config
elsewhere/dataset.toml`` works from any directory. Without a config file nothing is read but
the inputs named on the command line.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from math import inf
from pathlib import Path
from typing import Any

from builder.card_config import CardConfig, card_config
from builder.errors import ConfigError
from builder.fs.releases import HUB_RELEASE
from builder.fs.uris import is_uri
from schemas.vocabulary import GROUP_POLICIES

CONFIG_NAME = "dataset.toml"


@dataclass(frozen=True)
class BuildConfig:
    episodes: tuple[str, ...] = ()
    synthetic_questions: tuple[str, ...] = ()
    llm_questions: tuple[str, ...] = ()
    out: Path = Path("build/dataset")
    upload_to: str = ""  # object-store URI the finished folder is copied to (builder.storage)
    rejects: Path = Path("build/rejects.jsonl")
    max_reject_ratio: float = 0.01
    strict: bool = False
    batch_lines: int = 2048
    max_line_bytes: int = 64 * 1024 * 1024
    hook_value_limit: int = 100_000
    hash_precision: int | None = None  # None: the exact scheme; n: floats rounded to n places
    # None: verified guarantees by answer hash (the seeds); a number: also by value within it,
    # as the capture code verifies (``builder.answers``)
    answer_tolerance: float | None = None
    parquet_max_rows_per_file: int = 200_000
    sessions: str = ""  # sqlite:///... or postgresql://...; empty: no sessions
    null_correct_trains: bool = True
    split_train: float = 0.90
    split_validation: float = 0.05
    split_test: float = 0.05
    split_salt: str = "agent-traces/v1"
    # which questions must share a split (``builder.derive.splits.groups``)
    split_group_by: str = "near_duplicate"
    split_near_duplicate_threshold: float = 0.5
    # the build whose assignment stands: a folder or org/name@revision; empty: ``out``'s own
    split_previous: str = ""
    # eval sets (FILE[:FIELD]) whose items no training prompt may overlap
    decontamination_evals: tuple[str, ...] = ()
    decontamination_ngram: int = 8
    decontamination_threshold: float = 0.5
    decontamination_max_share: float = 0.02  # --strict refuses an eval matched above this
    dpo_max_pairs_per_episode: int = 4
    publish_repo: str = ""
    publish_private: bool = False
    max_output_chars: int = 8000
    workers: int = 0  # ingest processes; 0: one per core for 64 MB+ runs; 1: in-process
    # episode files are read and exported in segments of this many stored bytes (a larger
    # file is a segment of its own); 0: automatic (``builder.staging.segment_threshold``)
    segment_bytes: int = 0
    # the episode files of each segment, fixed when the build starts (``builder.build``)
    segments: tuple[tuple[str, ...], ...] = ()
    engine: str = "local"  # "local" or "ray"
    ray_address: str = ""  # empty: a local Ray with 2 CPUs; "auto" or "ray://host:10001"
    cache_dir: Path | None = None  # per-file normalized results for incremental rebuilds
    cache_verify: bool = False  # hash every input instead of trusting size/inode/mtime/ctime
    # the staging tables are temporary and read once: uncompressed, they write and read in
    # half the CPU of lz4 (each segment's are removed once cut into buckets)
    staging_compression: str = "none"
    redaction_enabled: bool = True
    redaction_allowlist: tuple[str, ...] = ()
    redaction_extra_patterns: tuple[tuple[str, str], ...] = ()

    card: CardConfig = field(default_factory=CardConfig)
    config_path: Path | None = None
    # ``build --from``: the names the restored inputs had in the build they were restored
    # from (restored file or database URL -> its name there), which the rows record as their
    # source; and that build, for the manifest (key -> value)
    input_names: tuple[tuple[str, str], ...] = ()
    built_from: tuple[tuple[str, str], ...] = ()

    def input_name(self, path: str) -> str:
        """What the rows call an input: its own path, or its name in a restored build."""
        return dict(self.input_names).get(path, path)

    def with_overrides(self, **overrides: Any) -> BuildConfig:
        """Apply command-line values; ``None`` means "not given"."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


# How a build runs, never what it writes (``builder.cache.segments`` keeps them out of its keys).
RUN_OPTIONS = frozenset(
    {"workers", "engine", "ray_address", "cache_dir", "cache_verify", "staging_compression"}
)
_SECTIONS = {
    "inputs": {"episodes", "synthetic_questions", "llm_questions", "sessions"},
    "output": {"out", "rejects", "parquet_max_rows_per_file", "upload_to"},
    "checks": {
        "max_reject_ratio",
        "strict",
        "max_line_bytes",
        "hook_value_limit",
        "answer_tolerance",
    },
    "build": {"batch_lines", "segment_bytes", *RUN_OPTIONS},
    "splits": {
        "train",
        "validation",
        "test",
        "salt",
        "group_by",
        "near_duplicate_threshold",
        "previous",
    },
    "decontamination": {"evals", "ngram", "threshold", "max_share"},
    "derive": {"dpo_max_pairs_per_episode", "null_correct_trains", "max_output_chars"},
    "redaction": {"enabled", "allowlist", "extra_patterns"},
    "publish": {"repo", "private"},
    "hashing": {"precision"},
}
_PREFIXED = {
    "splits": "split_",
    "decontamination": "decontamination_",
    "publish": "publish_",
    "redaction": "redaction_",
    "hashing": "hash_",
}
_NOT_PATHS = {"redaction_allowlist"}


def find_config(explicit: Path | None, cwd: Path) -> Path | None:
    if explicit is not None:
        if explicit.is_dir():
            raise ConfigError(f"{explicit} is a folder: give the config file, e.g. dataset.toml")
        if not explicit.exists():  # not ``is_file``: ``--config /dev/null`` means no settings
            raise ConfigError(f"{explicit}: config file not found")
        return explicit
    # Relative, so manifests and cards name inputs the same way on every machine.
    candidate = Path(CONFIG_NAME) if cwd == Path.cwd() else cwd / CONFIG_NAME
    return candidate if candidate.is_file() else None


def load_config(path: Path | None) -> BuildConfig:
    if path is None:
        return BuildConfig()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        # tomllib says "Cannot overwrite a value" (or "Cannot declare … twice") for a key or
        # table given twice, without saying so
        repeated = str(exc).startswith(("Cannot overwrite", "Cannot declare"))
        twice = " (a key or table given twice?)" if repeated else ""
        raise ConfigError(f"{path}: cannot read config: {exc}{twice}") from exc
    base = path.parent
    values: dict[str, Any] = {"config_path": path}
    for section, table in raw.items():
        if section == "card":
            values["card"] = card_config(path, table)
            continue
        allowed = _SECTIONS.get(section)
        if allowed is None:
            known = [*_SECTIONS, "card"]
            raise ConfigError(f"{path}: unknown section [{section}]{_nearest(section, known)}")
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {section} must be a [{section}] table")
        for key, value in table.items():
            if key not in allowed:
                hint = _nearest(key, allowed)
                raise ConfigError(f"{path}: unknown key {key!r} in [{section}]{hint}")
            name = _PREFIXED.get(section, "") + key
            values[name] = _coerce(path, base, name, value, f"[{section}] {key}")
            _check_range(path, f"[{section}] {key}", name, values[name])
    config = BuildConfig(**values)
    splits = (config.split_train, config.split_validation, config.split_test)
    if abs(sum(splits) - 1.0) > 1e-9:
        raise ConfigError(
            f"{path}: [splits] train + validation + test must add up to 1, not {sum(splits):g}"
        )
    return config


def given_keys(path: Path | None) -> frozenset[str]:
    """The settings the config file ``path`` (already read by ``load_config``) gives, as
    ``BuildConfig`` field names; a ``[card]`` key as ``card.<key>``."""
    if path is None:
        return frozenset()
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    return frozenset(
        f"card.{key}" if section == "card" else _PREFIXED.get(section, "") + key
        for section, table in raw.items()
        for key in table
    )


def coerce_setting(path: Path, name: str, value: Any, label: str) -> Any:
    """A setting read from another file than a config (an earlier build's manifest, at
    ``path``), checked as a config key is."""
    value = _coerce(path, path.parent, name, value, label)
    _check_range(path, label, name, value)
    return value


MAX_WORKERS = 1024  # ingest processes: a pool of more is a typo (and past what it can start)

# The most of a count or size: Arrow's strings and lists are indexed by 32-bit offsets, and
# a value past what an index holds is a typo (it ended in an OverflowError).
INT32_MAX = 2**31 - 1

# The least value of a numeric setting (and the most, where there is one).
_RANGES: dict[str, tuple[float, float | None]] = {
    "batch_lines": (1, INT32_MAX),
    "workers": (0, MAX_WORKERS),
    "max_line_bytes": (1024, INT32_MAX),
    "hook_value_limit": (0, INT32_MAX),
    "parquet_max_rows_per_file": (1, INT32_MAX),
    "dpo_max_pairs_per_episode": (0, INT32_MAX),
    "max_output_chars": (1, INT32_MAX),
    "max_reject_ratio": (0, 1),
    "split_train": (0, 1),
    "split_validation": (0, 1),
    "split_test": (0, 1),
    "split_near_duplicate_threshold": (0.05, 1),
    "decontamination_ngram": (1, 64),
    "decontamination_threshold": (0, 0.999),
    "decontamination_max_share": (0, 1),
}


def _check_range(path: Path, label: str, name: str, value: Any) -> None:
    bounds = _RANGES.get(name)
    if bounds is None:
        return
    low, high = bounds
    # written as "not within" so that NaN, which compares false with anything, is refused
    if not value >= low or (high is not None and not value <= high):
        wanted = f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"
        raise ConfigError(f"{path}: {label} must be {wanted}, not {value!r}")


def _nearest(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, or a list of them all."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; known: {', '.join(sorted(known))}"


def parse_precision(value: Any) -> int | None:
    """``"exact"`` (the seeds' scheme) or a number of decimal places (the rounded scheme)."""
    if value == "exact":
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 15:
        raise ValueError(f'must be "exact" or a number of decimal places 0-15, not {value!r}')
    return value


def _coerce(path: Path, base: Path, key: str, value: Any, label: str = "") -> Any:
    """``value`` of the setting ``key`` as ``BuildConfig`` holds it; ``label``: how the file
    spells the setting (``[splits] salt``), for messages."""
    label = label or key
    default = getattr(BuildConfig(), key)
    if key == "hash_precision":
        try:
            return parse_precision(value)
        except ValueError as exc:
            raise ConfigError(f"{path}: [hashing] precision {exc}") from exc
    if key == "answer_tolerance":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < inf:
            raise ConfigError(
                f"{path}: [checks] answer_tolerance must be a finite number of 0 or more "
                f"(the capture code's is 0.1), not {value!r}"
            )
        return float(value)
    if key == "sessions" and isinstance(value, str):
        return _session_url(base, value)
    if key == "redaction_extra_patterns":
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ConfigError(f"{path}: [redaction] extra_patterns must be a table of strings")
        for kind, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"{path}: [redaction.extra_patterns] {kind} is not a regular expression: {exc}"
                ) from exc
        return tuple(sorted(value.items()))
    if key == "split_group_by" and value not in GROUP_POLICIES:
        raise ConfigError(
            f"{path}: [splits] group_by must be one of {', '.join(GROUP_POLICIES)}, not {value!r}"
        )
    if key == "split_previous":
        if not isinstance(value, str):
            raise ConfigError(f"{path}: [splits] previous must be a folder or org/name@version")
        return value if not value or HUB_RELEASE.match(value) else str(base / value)
    if key == "cache_dir":
        if not isinstance(value, str):
            raise ConfigError(f"{path}: cache_dir must be a path string")
        return base / value
    if key == "upload_to" and not (isinstance(value, str) and is_uri(value)):
        raise ConfigError(f"{path}: upload_to must be an object-store URI such as s3://bucket/x")
    if key == "segment_bytes" and (type(value) is not int or value < 0):
        raise ConfigError(f"{path}: segment_bytes must be a number of bytes (0: automatic)")
    if key == "engine" and value not in ("local", "ray"):
        raise ConfigError(f'{path}: engine must be "local" or "ray"')
    if key in _NOT_PATHS:
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            raise ConfigError(f"{path}: {label} must be a list of strings")
        return tuple(value)
    if isinstance(default, tuple):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ConfigError(f"{path}: {label} must be a string or a list of strings")
        return tuple(i if is_uri(i) else str(base / i) for i in items)
    if isinstance(default, Path):
        if not isinstance(value, str):
            raise ConfigError(f"{path}: {label} must be a path string")
        return base / value
    expected = type(default)
    numeric_ok = expected is float and isinstance(value, int)
    if isinstance(value, bool) != (expected is bool) or not (
        isinstance(value, expected) or numeric_ok
    ):
        kind = {
            "float": "a number",
            "int": "an integer",
            "bool": "true or false",
            "str": "a string",
        }
        wanted = kind.get(expected.__name__, expected.__name__)
        raise ConfigError(f"{path}: {label} must be {wanted}, not {value!r}")
    return value


def _session_url(base: Path, url: str) -> str:
    """``sqlite:///relative.db`` in a config file is relative to the file's folder."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url[len(prefix) :].startswith("/"):
        return prefix + str(base / url[len(prefix) :])
    return url
