"""What changed between two releases, from their manifests, and how a release describes itself.

The published copy of a build carries a ``release`` section in ``manifest.json`` and a
"Release" section in the card: the version, the previous version, and a short changelog —
each split's row count before and after and its net change (from the manifests' row counts),
the configs whose data files changed (from the manifests' file digests: rows replaced one
for one change no count), configs that appeared or disappeared, and the schema version
change. Nothing run-dependent (time,
user, token) goes in, so publishing the same build twice stages the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from builder.publish.versions import Version
from schemas.manifest import CARD_DIGEST

SPLIT_ORDER = ("train", "validation", "test")
RELEASE_HEADING = "## Release"


def _rows(manifest: Mapping[str, Any] | None) -> dict[str, dict[str, int]]:
    configs = (manifest or {}).get("configs") or {}
    return {name: dict((c or {}).get("rows") or {}) for name, c in configs.items()}


def _split_key(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)


def _files(manifest: Mapping[str, Any] | None) -> dict[str, set[tuple[str, str]]]:
    """Each config's data files with their digests."""
    out: dict[str, set[tuple[str, str]]] = {}
    for path, digest in ((manifest or {}).get("files") or {}).items():
        config, slash, _ = str(path).partition("/")
        if slash:
            out.setdefault(config, set()).add((str(path), str(digest)))
    return out


def _changed_configs(
    previous: Mapping[str, Any] | None, current: Mapping[str, Any]
) -> list[str] | None:
    """The configs of both releases whose data files differ (a file's name and digest);
    None when the previous manifest records no file digests (not known)."""
    if previous is None:
        return []
    if not previous.get("files"):
        return None
    both = set(_rows(previous)) & set(_rows(current))  # configs, not other folders (images)
    before, after = _files(previous), _files(current)
    return sorted(c for c in both if before.get(c) != after.get(c))


def changelog(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> dict[str, Any]:
    """Row changes per config and split, configs added/removed, schema version change."""
    before, after = _rows(previous), _rows(current)
    rows: dict[str, dict[str, dict[str, int]]] = {}
    for name in sorted(set(before) | set(after)):
        splits = set(before.get(name, {})) | set(after.get(name, {}))
        for split in sorted(splits, key=_split_key):
            old = int(before.get(name, {}).get(split, 0))
            new = int(after.get(name, {}).get(split, 0))
            if old != new:
                rows.setdefault(name, {})[split] = {
                    "before": old,
                    "after": new,
                    "net": new - old,
                }
    old_schema = (previous or {}).get("schema_version")
    new_schema = current.get("schema_version")
    return {
        "first_release": previous is None,
        "schema_version": {
            "from": old_schema,
            "to": new_schema,
            "changed": previous is not None and old_schema != new_schema,
        },
        "configs_added": sorted(set(after) - set(before)) if previous is not None else [],
        "configs_removed": sorted(set(before) - set(after)),
        "configs_changed": _changed_configs(previous, current),
        "rows": rows,
        "rows_total": {
            "before": sum(sum(s.values()) for s in before.values()),
            "after": sum(sum(s.values()) for s in after.values()),
        },
    }


def release_info(
    repo: str,
    version: Version,
    previous: tuple[Version, str] | None,
    previous_manifest: Mapping[str, Any] | None,
    manifest: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "repo": repo,
        "version": str(version),
        "tag": version.tag,
        "previous_version": str(previous[0]) if previous else None,
        "previous_tag": previous[1] if previous else None,
        "changes": changelog(previous_manifest if previous else None, manifest),
    }


def release_manifest(manifest: Mapping[str, Any], release: Mapping[str, Any]) -> bytes:
    """The build's manifest plus its ``release`` section, in the builder's JSON layout."""
    data = {k: v for k, v in manifest.items() if k != "release"}
    data["release"] = dict(release)
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def changelog_markdown(release: Mapping[str, Any]) -> str:
    changes = release["changes"]
    schema = changes["schema_version"]
    if changes["first_release"]:
        total = changes["rows_total"]["after"]
        return f"First release: {total} rows in all configs, schema version {schema['to']}."
    lines = []
    if schema["changed"]:
        lines.append(f"Schema version {schema['from']} → {schema['to']}.")
    else:
        lines.append(f"Schema version {schema['to']} (unchanged).")
    if changes["configs_added"]:
        lines.append(
            "Configs added: " + ", ".join(f"`{c}`" for c in changes["configs_added"]) + "."
        )
    if changes["configs_removed"]:
        removed = ", ".join(f"`{c}`" for c in changes["configs_removed"])
        lines.append(f"Configs removed: {removed}.")
    changed = changes.get("configs_changed")
    same_configs = not changes["configs_added"] and not changes["configs_removed"]
    if changed:
        lines.append("Data files changed in: " + ", ".join(f"`{c}`" for c in changed) + ".")
    elif changed is not None and same_configs:
        lines.append("No data file changed: the data is that of the previous version.")
    rows = changes["rows"]
    if not rows:
        lines.append("Row counts are unchanged in every config and split.")
        return "\n\n".join(lines)
    table = [
        "| config | split | rows before | rows after | net change |",
        "|---|---|---|---|---|",
    ]
    for name, splits in rows.items():
        for split, n in splits.items():
            net = n["after"] - n["before"]  # a release before ``net`` was recorded
            table.append(f"| `{name}` | {split} | {n['before']} | {n['after']} | {net:+d} |")
    lines.append("\n".join(table))
    lines.append(
        "The net change is that of each split's row count between the two releases' "
        "manifests, not a count of rows added and removed (rows replaced one for one do not "
        "show: the configs whose data files changed are named above); the other configs and "
        "splits have as many rows as before."
    )
    return "\n\n".join(lines)


def release_section(release: Mapping[str, Any], default_config: str = "sft") -> str:
    previous = release["previous_version"]
    since = (
        f"the previous version is {previous} (`{release['previous_tag']}`)"
        if previous
        else "this is the first release"
    )
    heading = "Changes" if not previous else f"Changes since {previous}"
    return (
        f"{RELEASE_HEADING}\n\n"
        f"This is version **{release['version']}** of the dataset (Hub tag "
        f"`{release['tag']}`); {since}. Published versions never change: pin one in training "
        "code with `revision`:\n\n"
        "```python\nfrom datasets import load_dataset\n\n"
        f'ds = load_dataset("{release["repo"]}", "{default_config}", '
        f'revision="{release["tag"]}")\n```\n\n'
        f"### {heading}\n\n{changelog_markdown(release)}\n"
    )


def release_card(card: str, release: Mapping[str, Any], default_config: str = "sft") -> bytes:
    """The card with a "Release" section before the first section after the title."""
    section = release_section(release, default_config)
    body_start = 0
    if card.startswith("---"):
        end = card.find("\n---", 3)
        body_start = card.find("\n", end + 4) + 1 if end >= 0 else 0
    anchor = card.find("\n## ", body_start)
    if anchor < 0:
        text = card.rstrip("\n") + "\n\n" + section
    else:
        text = card[: anchor + 1] + section + "\n" + card[anchor + 1 :]
    return text.encode()


def make_release(
    repo: str,
    version: Version,
    previous: tuple[Version, str] | None,
    previous_manifest: Mapping[str, Any] | None,
    manifest: Mapping[str, Any],
    card_text: str,
    config_name: str,
) -> tuple[dict[str, Any], bytes, bytes]:
    """The release of a build against the one before it: its ``release`` section, its card
    and its manifest, which records the release's card as the build's records the build's."""
    release = release_info(repo, version, previous, previous_manifest, manifest)
    card = release_card(card_text, release, config_name)
    digest = {CARD_DIGEST: hashlib.sha256(card).hexdigest()}
    return release, card, release_manifest({**manifest, **digest}, release)


def default_config(card: str) -> str:
    """The card's default config (``default: true`` in its YAML), else ``sft``."""
    import yaml

    if card.startswith("---"):
        end = card.find("\n---", 3)
        try:
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            data = yaml.load(card[3:end], Loader=loader) if end > 0 else None
        except yaml.YAMLError:
            data = None
        configs = (data.get("configs") or []) if isinstance(data, dict) else []
        for config in configs:
            if isinstance(config, dict) and config.get("default"):
                return str(config.get("config_name"))
        if configs and isinstance(configs[0], dict) and configs[0].get("config_name"):
            return str(configs[0]["config_name"])
    return "sft"
