"""The pre-publish gate: only an intact, clean build leaves the machine.

A release is exactly what the build wrote: ``README.md``, ``manifest.json`` and the data
files, the card and the data files as the manifest records their sha256. The gate refuses a
folder whose files no longer match those digests (edited, truncated, missing, or added after
the build), and a build whose manifest records failed integrity checks (unless explicitly
allowed).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builder.errors import DataRefused
from builder.fs import recorded_files
from builder.fs.storage import file_sha256
from schemas import manifest as manifest_file
from schemas.manifest import CARD, CARD_DIGEST, MANIFEST, Manifest, ManifestError

_SAID = {
    recorded_files.OUTSIDE: "not a path inside the build folder",
    recorded_files.MISSING: "listed in the manifest but missing",
    recorded_files.CHANGED: "changed since the build (sha256 differs from the manifest)",
    recorded_files.UNRECORDED: "not written by the build (not in the manifest)",
}


class GateRefused(DataRefused, RuntimeError):
    """The build may not be published; ``problems`` lists every reason found."""

    def __init__(self, folder: Path, problems: list[str]) -> None:
        shown = problems[:20] + ([f"… and {len(problems) - 20} more"] if len(problems) > 20 else [])
        super().__init__(f"{folder}: not publishable: " + "; ".join(shown))
        self.problems = problems


def read_manifest(folder: Path) -> Manifest:
    if not folder.is_dir():
        raise GateRefused(folder, ["not a folder (build it first: `episodes build`)"])
    try:
        return manifest_file.read_manifest(folder)
    except ManifestError as exc:
        said = f"no {MANIFEST}: not a build folder" if exc.problem == "missing" else str(exc)
        raise GateRefused(folder, [said]) from None


def failed_checks(manifest: Mapping[str, Any]) -> dict[str, int]:
    """Integrity checks that failed, by kind (episode and question checks together)."""
    checks = manifest.get("checks") or {}
    failed: dict[str, int] = {}
    for section in ("episodes_by_kind", "questions_by_kind"):
        for kind, count in (checks.get(section) or {}).items():
            if isinstance(count, int) and count > 0:
                failed[kind] = failed.get(kind, 0) + count
    if checks.get("passed") is False and not failed:
        failed["checks"] = 1
    return failed


def release_files(folder: Path, manifest: Mapping[str, Any]) -> dict[str, str]:
    """``path -> sha256`` of the data files, as the manifest records them."""
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise GateRefused(
            folder,
            [f"{MANIFEST} has no 'files' digests (built by an older builder): rebuild it"],
        )
    return {str(k): str(v) for k, v in files.items()}


def check_build(
    folder: Path,
    manifest: Mapping[str, Any],
    allow_failed_checks: bool = False,
    digests: bool = True,
    allow_unredacted: bool = False,
) -> dict[str, str]:
    """Verify ``folder`` against ``manifest``; return the data files' digests, or refuse.

    ``digests=False`` checks everything but the file contents (no hashing)."""
    problems: list[str] = []
    failed = failed_checks(manifest)
    if failed and not allow_failed_checks:
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(failed.items()))
        problems.append(
            f"the build failed integrity checks ({counts}); fix the inputs and rebuild, or "
            "pass --allow-failed-checks to publish it anyway"
        )
    redaction = manifest.get("redaction") or {}
    if not redaction.get("enabled", False) and not allow_unredacted:
        problems.append(
            "the build was made with secret redaction off (or before it existed); rebuild with "
            "[redaction] enabled, or pass --allow-unredacted to publish it anyway"
        )
    files = release_files(folder, manifest)
    card = manifest.get(CARD_DIGEST)
    if not (folder / CARD).is_file():
        problems.append(f"{CARD} (the dataset card) is missing")
    elif not isinstance(card, str):
        problems.append(
            f"{MANIFEST} has no digest of {CARD} (built by an older builder): rebuild it"
        )
    elif digests and file_sha256(folder / CARD) != card:
        problems.append(
            f"{CARD}: changed since the build (sha256 differs from the manifest); it "
            "declares the configs: rebuild instead of editing it ([card] in dataset.toml)"
        )
    present = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    present = [rel for rel in present if rel not in (CARD, MANIFEST)]
    for rel, what in recorded_files.differences(folder, files, present, digests):
        problems.append(f"{rel}: {_SAID[what]}")
    if problems:
        raise GateRefused(folder, problems)
    return files
