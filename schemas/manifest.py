"""``manifest.json``: what a build read, what it wrote, and what it refused, by kind.

The one description of the file every reader of a build folder shares (the report, the
publish gate, the build's own preflight and closing summary): its name, the card's name
and digest key, the keys it holds (``Manifest``), and one function that reads it
(``read_manifest``). The export writes it (``builder.export.manifest``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

MANIFEST = "manifest.json"
CARD = "README.md"  # the dataset card, beside the manifest
CARD_DIGEST = "card_sha256"  # the manifest's record of the card it was written with
BUILD_FILES = frozenset({CARD, MANIFEST})  # what a build writes beside the files it lists


class Manifest(TypedDict, total=False):
    """The keys of a manifest. ``total=False``: an older builder's manifest lacks some, and
    every reader checks those it needs."""

    builder_version: str
    schema_version: str
    card_sha256: str
    files: dict[str, str]  # path -> sha256 of every data file
    configs: dict[str, Any]  # config -> rows per split, features
    inputs: list[dict[str, Any]]  # one per input file: lines, valid, rejected, blank, sha256
    rejects: dict[str, Any]  # total, by_kind
    checks: dict[str, Any]  # episodes_by_kind, questions_by_kind
    training_exclusions: dict[str, int]  # reason -> episodes
    # method, salt, ratios, questions_per_split, assignment_sha256; group_by, threshold,
    # previous, groups and the leakage audit (``builder.derive.splits.plan``)
    splits: dict[str, Any]
    held_out_rows: dict[str, dict[str, int]]  # config -> reason -> rows kept out of training
    decontamination: dict[str, Any] | None  # evals, their matches, rows removed per config
    hashing: dict[str, Any]  # scheme, precision
    options: dict[str, Any]  # the settings that shape the rows (``build --from`` reads them)
    card: dict[str, Any]  # the ``[card]`` settings
    layouts: dict[str, int]
    redaction: dict[str, Any]
    sessions: dict[str, Any]
    duplicate_keys: dict[str, int]
    extra_fields: dict[str, int]
    bounded_hook_values: int
    # rule (of ``schemas.lines.rebuild``), not_round_tripped: bounded hook values by JSON
    # path, redacted secrets, values holding one by table.column (``builder.export.round_trip``)
    round_trip: dict[str, Any]
    # ``build --from``: source (folder or org/name@version), its builder and schema
    # versions, release, and the sha256 of its manifest
    built_from: dict[str, str]
    release: dict[str, Any]  # added to the published copy (``builder.publish.changelog``)


class ManifestError(ValueError):
    """A manifest cannot be read: ``problem`` is ``missing``, ``unreadable`` or
    ``not_an_object``; ``detail``, what the file system or the JSON parser said."""

    def __init__(self, path: Path, problem: str, detail: str = "") -> None:
        said = {
            "missing": f"no {MANIFEST}",
            "unreadable": f"{MANIFEST} is unreadable: {detail}",
            "not_an_object": f"{MANIFEST} is not a JSON object",
        }
        super().__init__(said[problem])
        self.path, self.problem, self.detail = path, problem, detail


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path``: a build folder (its ``manifest.json``) or the file itself.
    Raises ``ManifestError``; which keys a reader needs, the reader checks."""
    if path.is_dir():
        path = path / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ManifestError(path, "missing", str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(path, "unreadable", str(exc)) from None
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise ManifestError(path, "unreadable", str(exc)) from None
    if not isinstance(manifest, dict):
        raise ManifestError(path, "not_an_object")
    return manifest  # type: ignore[return-value]
