"""The dataset card: YAML that ``datasets`` reads (configs, features), then a page for people.

Features come from the Arrow schemas by ``datasets``' own conversion rules
(``builder.export.features``, tested against ``datasets``), so the card can never disagree
with the Parquet files. Nothing run-dependent (time, host, absolute paths) goes in, so the
same build gives the same card.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from builder.config import CardConfig
from builder.export.card_held_out import (
    assignment_section,
    audit_section,
    decontamination_section,
)
from builder.export.catalog import doc_for
from builder.export.features import Unconvertible, schema_features
from builder.export.recipes import recipes_section
from builder.export.round_trip import round_trip_sentence
from schemas.tables import column_docs, describe, role_of
from schemas.vocabulary import SPLITS


@dataclass(frozen=True)
class ExportedConfig:
    name: str
    schema: pa.Schema
    rows: Mapping[str, int]  # split -> rows
    kind: str  # "objective" or "table"
    # split -> its data files (dataset-relative, in order): the card lists them by name
    files: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class CardImages:
    """The card's charts, drawn by a later stage from the folder this one wrote (the
    build passes ``builder.report.card_images``), so the export does not import the
    report. ``write(folder, manifest, memo, row_chars)`` draws them into the folder and
    returns ``{path: sha256}`` for the manifest (``row_chars``: the characters per row of the
    data files counted as they were written, ``SegmentOutput.row_chars``; any other file's
    are read from it); ``section(files)`` is the card's markdown for the images the manifest
    lists."""

    write: Callable[[Path, dict[str, Any], Path | None, Mapping[str, Any]], dict[str, str]]
    section: Callable[[Mapping[str, str]], list[str]]


def size_category(n: int) -> str:
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return label
    return "10M<n<100M"


def card_yaml(
    configs: Sequence[ExportedConfig], card: CardConfig, episodes: int, memo: Path | None = None
) -> str:
    """The card's YAML. ``memo``: a file remembering the last YAML with what it was made
    from (the schemas, which splits have rows and their files, the card settings, the
    library versions), and apart from it the features ``datasets`` derived from the
    schemas: a rebuild that changes none of these reuses the YAML, and one that changes only
    files or settings need not import ``datasets`` (≈ 1 s) to write it again."""
    import importlib.metadata

    # ``datasets``' rules convert the features; PyYAML writes them
    versions = [importlib.metadata.version(p) for p in ("datasets", "pyyaml")]
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    loadable = _loadable(configs)
    features = [(c.name, c.schema.serialize().to_pybytes().hex()) for c in loadable]
    info_key = _key({"features": features, "versions": versions, "code": code})
    material = {
        "card": repr(card),
        "episodes": card.size_category or size_category(episodes),
        "configs": [
            (
                c.name,
                [s for s in SPLITS if c.rows.get(s)],
                {s: list(f) for s, f in sorted(c.files.items())},
            )
            for c in loadable
        ],
        "info": info_key,
    }
    key = _key(material)
    remembered: dict[str, Any] = {}
    if memo is not None:
        try:
            remembered = dict(json.loads(memo.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            remembered = {}
        if remembered.get("key") == key and isinstance(remembered.get("yaml"), str):
            return str(remembered["yaml"])
    info = remembered.get("info") if remembered.get("info_key") == info_key else None
    if info is None:
        info = _dataset_info(loadable)
    text = _card_yaml(loadable, card, episodes, info)
    if memo is not None:
        memo.parent.mkdir(parents=True, exist_ok=True)
        kept = {"key": key, "yaml": text, "info_key": info_key, "info": info}
        memo.write_text(json.dumps(kept), encoding="utf-8")
    return text


def _key(material: object) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _loadable(configs: Sequence[ExportedConfig]) -> list[ExportedConfig]:
    # datasets cannot load a split without files, so empty splits and configs are left out.
    return [c for c in configs if any(c.rows.values())]


def _dataset_info(loadable: Sequence[ExportedConfig]) -> Any:
    """The card's ``dataset_info``: each config's features as ``datasets`` converts its Arrow
    schema (what ``load_dataset`` checks the files against), laid out as ``datasets`` lays
    out its infos in a card (``DatasetInfosDict.to_dataset_card_data``): one config's alone,
    several sorted by name, each led by its ``config_name``."""
    try:
        features = {c.name: schema_features(c.schema) for c in loadable}
    except Unconvertible:
        return _dataset_info_by_datasets(loadable)
    if not features:
        return None
    if len(features) == 1:
        ((name, only),) = features.items()
        return {"features": only} if name == "default" else {"config_name": name, "features": only}
    return [{"config_name": name, "features": features[name]} for name in sorted(features)]


def _dataset_info_by_datasets(loadable: Sequence[ExportedConfig]) -> Any:
    """``_dataset_info`` by ``datasets`` itself: for a type ``schema_features`` leaves to it."""
    from datasets import Features
    from datasets.info import DatasetInfo, DatasetInfosDict
    from huggingface_hub import DatasetCardData

    infos = DatasetInfosDict(
        {
            c.name: DatasetInfo(features=Features.from_arrow_schema(c.schema), config_name=c.name)
            for c in loadable
        }
    )
    data = DatasetCardData()
    infos.to_dataset_card_data(data)
    return data.get("dataset_info")


def _card_yaml(
    loadable: Sequence[ExportedConfig], card: CardConfig, episodes: int, info: Any
) -> str:
    """The card's YAML: what ``huggingface_hub``'s ``DatasetCardData(...).to_yaml()`` writes
    for these fields, key for key and byte for byte (tests hold the two equal), without
    importing the hub (≈ 0.1 s in a rebuild) and, where it writes the same text, with
    libyaml's emitter rather than PyYAML's Python one (≈ 10 × faster)."""
    data: dict[str, Any] = {
        # the order of ``DatasetCardData.__init__``'s fields, then the extra ones as given
        "language": list(card.language),
        "license": card.license,
        "size_categories": [card.size_category or size_category(episodes)],
        "task_categories": list(card.task_categories),
        "pretty_name": card.pretty_name,
        "tags": list(card.tags),
        "configs": [
            {
                "config_name": c.name,
                # Files by name, not a glob: ``datasets`` keys its cache of a local folder
                # on the YAML, so a file whose content changed (and so its name) is read
                # again rather than served from a stale cache.
                "data_files": [
                    {"split": s, "path": list(c.files.get(s) or [f"{c.name}/{s}-*.parquet"])}
                    for s in SPLITS
                    if c.rows.get(s)
                ],
                **({"default": True} if c.name == card.default_config else {}),
            }
            for c in loadable
        ],
    }
    if info is not None:
        data["dataset_info"] = info
    import yaml  # here: a rebuild whose card is remembered does not need it

    return yaml.dump(data, Dumper=_dumper(card), sort_keys=False, allow_unicode=True).strip()


def _dumper(card: CardConfig) -> Any:
    """The hub's ``yaml.Dumper``; libyaml's (``CDumper``, where PyYAML has it) when every
    string is printable ASCII, where the two write the same text. Elsewhere they differ: a
    character past U+FFFF, for one, is escaped by libyaml and written as it is by Python.
    Every string but the card's settings is the builder's own (config, column and file
    names, types): printable ASCII."""
    import yaml

    given = (card.pretty_name, card.license, card.size_category, card.default_config)
    given += (*card.language, *card.tags, *card.task_categories)
    if all(s.isascii() and s.isprintable() for s in given):
        return getattr(yaml, "CDumper", yaml.Dumper)
    return yaml.Dumper


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _config_section(c: ExportedConfig) -> str:
    doc = doc_for(c.name)
    docs = column_docs(c.schema)
    if any(role_of(f) for f in c.schema):  # the normalized tables declare each column's role
        columns = _table(
            ("column", "type", "role", "description"),
            [(f"`{f.name}`", f"`{f.type}`", role_of(f) or "", docs[f.name]) for f in c.schema],
        )
    else:
        columns = _table(
            ("column", "type", "description"),
            [(f"`{f.name}`", f"`{f.type}`", docs[f.name]) for f in c.schema],
        )
    example = (
        "```python\nfrom datasets import load_dataset\n\n"
        f'ds = load_dataset("<repo or path>", "{c.name}", split="train")\n```'
    )
    layout = f"Layout: {doc.layout}.\n\n" if doc.layout != "table" else ""
    return (
        f"### `{c.name}`\n\n{doc.purpose or describe(c.schema)}\n\n{layout}{example}\n\n"
        f"<details><summary>columns</summary>\n\n{columns}\n\n</details>\n"
    )


def _redaction_section(redaction: Mapping[str, Any] | None) -> list[str]:
    if not redaction:
        return []
    if not redaction["enabled"]:
        return ["## Secret redaction", "", "**Off** for this build.", ""]
    found = [(kind, n) for kind, n in redaction["by_kind"].items() if n]
    listing = ", ".join(f"{kind} {n}" for kind, n in found) if found else "none found"
    return [
        "## Secret redaction",
        "",
        "Every text field that reaches a config (code, outputs, reasoning, messages, hook "
        "values, answers, session actions) was scanned for credential shapes before any config "
        "was derived; each match is replaced by `<REDACTED:kind>`: the columns whose role is "
        "`text` or `json` in the tables' column lists. Hash columns are of the original "
        f"values and were not changed. Replacements: {listing}.",
        "",
    ]


def _hashing_section(hashing: Mapping[str, Any] | None) -> list[str]:
    precision = (hashing or {}).get("precision")
    scheme = (
        "**exact** (the episode schema's): "
        "`sha256(json.dumps(normalize_value(x), sort_keys=True))[:16]`"
        if precision is None
        else f"**rounded**: every float rounded to {precision} decimal places before "
        "`sha256(json.dumps(normalize_value(x), sort_keys=True))[:16]`"
    )
    return [
        "## Values and hashes",
        "",
        f"Hash scheme of this build: {scheme}, with the capture side's `normalize_value` "
        "(a pandas DataFrame or Series becomes a scalar, list, dict or records; numpy "
        "scalars become Python ones; anything else is serialised with `str()`). The `rl` "
        "config carries it per row as `hash_precision` (null: exact); pass it to the reward "
        "functions (`builder.contract.rewards`) so a student's answer is hashed the same way.",
        "",
        "Columns documented as canonical JSON hold Python's `json.dumps(value, "
        "sort_keys=True)` text: a NaN or infinite value is the bare token `NaN`, `Infinity` "
        "or `-Infinity`, as the capture code wrote it (it is not `null`: its hash differs). "
        "Read them with Python's `json.loads`; strict JSON parsers refuse those tokens.",
        "",
    ]


def _sessions_section(summary: Mapping[str, Any] | None) -> list[str]:
    if not summary:
        return []
    by_source = ", ".join(f"{k} {v}" for k, v in sorted(summary["actions_by_source"].items()))
    excluded = ", ".join(f"{k} {v}" for k, v in sorted(summary["excluded_sessions"].items()))
    unread = [f"`{t}.{c}`" for t, cs in summary.get("unread_columns", {}).items() for c in cs]
    not_read = f" Database columns no table holds: {', '.join(unread)}." if unread else ""
    return [
        "## Interactive sessions",
        "",
        f"{summary['sessions']} sessions with {summary['actions']} actions (by source: "
        f"{by_source}); {summary['verified_sessions']} verified "
        f"({summary['verified_share']:.0%}). Verified sessions are replayed into `sft` "
        f'({summary["sft_rows"]} rows, `source = "session"`) and `self_correction` '
        f"({summary['self_correction_rows']} rows); an assistant turn whose action is marked "
        "incorrect is kept as context with weight 0. Sessions not replayed: "
        f"{excluded}. Rejected rows: {summary['rejected']['sessions']} sessions, "
        f"{summary['rejected']['actions']} actions.{not_read}",
        "",
    ]


def card_markdown(
    configs: Sequence[ExportedConfig],
    card: CardConfig,
    manifest: Mapping[str, Any],
    episodes: int,
    yaml: str,
    dataset: str = "path/to/dataset",
    images: CardImages | None = None,
) -> str:
    """The card: ``yaml`` (``card_yaml``'s) between the front matter's dashes, then the
    markdown."""
    counts = _table(
        ("config", *SPLITS, "total"),
        [
            (f"`{c.name}`", *(c.rows.get(s, 0) for s in SPLITS), sum(c.rows.values()))
            for c in configs
        ],
    )
    objectives = [c for c in configs if c.kind == "objective"]
    tables = [c for c in configs if c.kind == "table"]
    inputs = _table(
        ("input", "sha256", "lines"),
        [(f"`{i['path']}`", f"`{i['sha256'][:16]}…`", i["lines"]) for i in manifest["inputs"]],
    )
    split = manifest["splits"]
    parts = [
        "---",
        yaml.rstrip(),
        "---",
        "",
        f"# {card.pretty_name}",
        "",
        card.description,
        "",
        "Every training config is derived from the same captured episodes (capture once, train "
        "many). Configs have the splits `train`, `validation` and `test`; a split (or config) "
        "with no rows is left out of the YAML, since it cannot be loaded.",
        "",
        "## Rows per config and split",
        "",
        counts,
        "",
        *(images.section(manifest.get("files") or {}) if images is not None else ()),
        *assignment_section(split),
        *audit_section(split),
        *decontamination_section(manifest.get("decontamination")),
        "## How labels were derived",
        "",
        "Only episodes whose `verified` flag holds — as captured *and* recomputed from the "
        "traces (gold submitted, gold answer hash equals the consistency majority, at least one "
        "consistency trace matched; for a `capture_v2` episode with no consistency traces: "
        "gold submitted and its answer hash one the question's ground truth accepts) — with "
        "no failed integrity check train (a failed hook check leaves an episode out of the "
        "configs that read hooks only: `prm`, `prm_stepwise`, `rl`); `prm` keeps the gold "
        "traces of unverified episodes "
        "too and encodes verification in its label (a failed check but `verified_mismatch`, "
        "which its recomputed label settles, leaves an episode out of `prm` as well). "
        "Excluded episodes stay in the tables; the manifest counts them by reason.",
        "",
        *_hashing_section(manifest.get("hashing")),
        *_sessions_section(manifest.get("sessions")),
        *_redaction_section(manifest.get("redaction")),
        "## Training configs",
        "",
        *(_config_section(c) for c in objectives),
        *recipes_section(dataset, {c.name for c in configs if c.rows.get("train")}),
        "## Tables",
        "",
        *(_config_section(c) for c in tables),
        "## Provenance",
        "",
        f"Builder {manifest['builder_version']}, schema {manifest['schema_version']}. "
        "Inputs (sha256 of the stored bytes):",
        "",
        inputs,
        "",
        "`manifest.json` beside this card has the full digests, row counts, rejects and "
        "integrity checks by kind. " + round_trip_sentence(manifest.get("round_trip")),
        "",
    ]
    return "\n".join(parts)
