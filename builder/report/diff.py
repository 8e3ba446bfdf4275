"""What changed against another build (its folder, or just its ``manifest.json``): rows per
config and split, rejects and failed checks by kind, training exclusions, inputs, files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.report.errors import AgainstError, BuildFolderError
from builder.report.folder import load_manifest, read_manifest
from schemas.vocabulary import SPLITS


@dataclass(frozen=True)
class Change:
    section: str
    key: str
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before


def load_other(path: Path) -> tuple[str, dict[str, Any]]:
    """The other build's manifest: ``path`` is a build folder or a manifest file."""
    try:
        if path.is_file():
            return str(path), read_manifest(path)
        return str(path), load_manifest(path)
    except BuildFolderError as exc:  # the other build is named by --against, not rebuilt
        raise AgainstError(f"--against {exc}") from exc


def _counts(section: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    keys = sorted(set(before) | set(after))
    return [Change(section, k, int(before.get(k, 0)), int(after.get(k, 0))) for k in keys]


def compare(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Every count of ``after`` next to ``before``'s (0 where one build lacks it)."""
    changes: list[Change] = []
    configs = list(after["configs"]) + [c for c in before["configs"] if c not in after["configs"]]
    for name in configs:
        old = (before["configs"].get(name) or {}).get("rows", {})
        new = (after["configs"].get(name) or {}).get("rows", {})
        for split in SPLITS:
            changes.append(Change("rows", f"{name}/{split}", old.get(split, 0), new.get(split, 0)))
    changes += _counts("rejects", before["rejects"]["by_kind"], after["rejects"]["by_kind"])
    for part in ("episodes_by_kind", "questions_by_kind"):
        changes += _counts(
            f"checks ({part.split('_')[0]})",
            before["checks"].get(part) or {},
            after["checks"].get(part) or {},
        )
    changes += _counts(
        "training exclusions", before["training_exclusions"], after["training_exclusions"]
    )
    lines = {i["path"]: i.get("lines", 0) for i in before["inputs"]}
    new_lines = {i["path"]: i.get("lines", 0) for i in after["inputs"]}
    changes += _counts("input lines", lines, new_lines)
    return changes


def file_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, int]:
    """Files added, removed, changed (sha256) and unchanged between the two manifests."""
    old, new = before["files"], after["files"]
    return {
        "added": len(set(new) - set(old)),
        "removed": len(set(old) - set(new)),
        "changed": sum(1 for p in set(old) & set(new) if old[p] != new[p]),
        "unchanged": sum(1 for p in set(old) & set(new) if old[p] == new[p]),
    }
