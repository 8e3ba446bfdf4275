"""The settings an earlier build recorded in its manifest, as ``BuildConfig`` fields: what
``build --from`` starts from, so that a release rebuilt where its ``dataset.toml`` is not
keeps its salt, ratios, hash scheme and every other setting that shapes its rows.

A setting the rebuild is given (by a flag, or by a key of the ``dataset.toml`` it reads)
stands instead; ``given_here`` lists those that then differ from the source's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from builder.card_config import card_config
from builder.config import BuildConfig, ConfigError, coerce_setting
from schemas.manifest import Manifest

# ``options`` keys that are BuildConfig fields of the same name
_OPTIONS = (
    "strict",
    "max_reject_ratio",
    "dpo_max_pairs_per_episode",
    "hook_value_limit",
    "hash_precision",
    "answer_tolerance",
    "max_output_chars",
    "null_correct_trains",
    "parquet_max_rows_per_file",
)


def recorded_settings(manifest: Manifest, path: Path) -> dict[str, Any]:
    """Field -> value for every setting ``manifest`` (read from ``path``) records; an older
    manifest records fewer, and those it lacks keep this build's values."""
    found: dict[str, Any] = {}
    options = manifest.get("options") or {}
    for name in _OPTIONS:
        if name in options:
            found[name] = options[name]
    splits = manifest.get("splits") or {}
    ratios = splits.get("ratios") or {}
    if not isinstance(ratios, Mapping) or not set(ratios) <= {"train", "validation", "test"}:
        raise _unusable(path, "splits.ratios", ratios)
    for split, share in ratios.items():
        found[f"split_{split}"] = share
    if splits.get("salt") is not None:
        found["split_salt"] = splits["salt"]
    if "group_by" in splits:
        found["split_group_by"] = splits["group_by"]
    if splits.get("threshold") is not None:
        found["split_near_duplicate_threshold"] = splits["threshold"]
    if "enabled" in (manifest.get("redaction") or {}):
        found["redaction_enabled"] = manifest["redaction"]["enabled"]
    decontamination = manifest.get("decontamination") or {}
    for key in ("ngram", "threshold", "max_share"):
        if key in decontamination:
            found[f"decontamination_{key}"] = decontamination[key]
    settings = {}
    for name, value in found.items():
        if value is None and getattr(BuildConfig(), name) is None:
            settings[name] = None
        else:
            try:
                settings[name] = coerce_setting(path, name, value, f"its manifest's {name}")
            except ConfigError as exc:
                raise _unusable(path, name, value) from exc
    if isinstance(manifest.get("card"), Mapping):
        try:
            settings["card"] = card_config(path, dict(manifest["card"]))
        except ConfigError as exc:
            raise _unusable(path, "card", manifest["card"]) from exc
    return settings


def _unusable(path: Path, name: str, value: Any) -> ConfigError:
    error = ConfigError(f"{path}: the setting {name} it records cannot be used ({value!r})")
    error.hint = "give that setting here (a flag or dataset.toml), or rebuild it from its JSONL"
    return error


def with_recorded(
    config: BuildConfig, recorded: Mapping[str, Any], given: Iterable[str]
) -> tuple[BuildConfig, list[str]]:
    """``config`` taking ``recorded``'s settings except those ``given`` here (field names,
    ``card.<key>`` for the card's), and the settings given here that differ from them."""
    given = set(given)
    taken = {k: v for k, v in recorded.items() if k not in given and k != "card"}
    differ = [k for k in given & set(recorded) if getattr(config, k) != recorded[k]]
    if "card" in recorded:
        here = {k.removeprefix("card.") for k in given if k.startswith("card.")}
        card = recorded["card"]
        differ += [f"card.{k}" for k in here if getattr(config.card, k) != getattr(card, k)]
        taken["card"] = dataclasses.replace(card, **{k: getattr(config.card, k) for k in here})
    rebuilt = dataclasses.replace(config, **taken)
    ratios = (rebuilt.split_train, rebuilt.split_validation, rebuilt.split_test)
    if abs(sum(ratios) - 1.0) > 1e-9:  # some given here, the others recorded (or edited)
        raise ConfigError(
            f"the split ratios (given here, or recorded by the build rebuilt) add up to "
            f"{sum(ratios):g}, not 1: give all three ([splits] train, validation, test)"
        )
    return rebuilt, sorted(differ)


def check_decontaminated(manifest: Manifest, config: BuildConfig, given: Iterable[str]) -> None:
    """An earlier build decontaminated against eval sets: rebuilt without them, the rows
    they matched would train again. Eval sets are files, not settings, so they must be
    given again (or ``[decontamination] evals = []`` given on purpose)."""
    evals = [e.get("name", "?") for e in (manifest.get("decontamination") or {}).get("evals", [])]
    if not evals or config.decontamination_evals or "decontamination_evals" in set(given):
        return
    raise ConfigError(
        f"the build rebuilt was decontaminated against {', '.join(evals)}: give those eval "
        "sets again with --decontaminate FILE[:FIELD], or the rows they matched train again "
        "(to drop them on purpose, set [decontamination] evals = [] in dataset.toml)"
    )
