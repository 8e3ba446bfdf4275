"""Where a build's tables are: a local build folder, or a release on the Hub
(``org/name@vX.Y.Z``), downloaded with only the files the restore reads."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from builder.errors import UsageError
from builder.fs.releases import HUB_RELEASE, ReleaseUnreadable, download_release
from schemas.manifest import MANIFEST

# The tables an episode's lines are rebuilt from, and the sessions'
EPISODE_TABLES = ("questions", "episodes", "traces", "turns", "hooks", "corrections", "messages")
SESSION_TABLES = ("sessions", "actions")


class NoBuild(UsageError):
    """The folder or release holds no build this restore can read."""


def is_release(spec: str) -> bool:
    """``org/name@vX.Y.Z`` that is not also a local path."""
    return bool(HUB_RELEASE.match(spec)) and not Path(spec).exists()


def build_folder(spec: str, tables: tuple[str, ...]) -> Path:
    """The local folder holding ``spec``'s manifest and ``tables`` (downloaded for a
    release)."""
    if is_release(spec):
        return _download(spec, tables)
    folder = Path(spec)
    if not (folder / MANIFEST).is_file():
        raise NoBuild(
            f"{spec}: no build there (no {MANIFEST}); give a build folder or org/name@version"
        )
    return folder


def _download(spec: str, tables: tuple[str, ...]) -> Path:
    try:
        return download_release(spec, tables)
    except ReleaseUnreadable as exc:
        raise NoBuild(
            f"{spec}: cannot read that release from the Hub ({exc}); check the "
            "repository and revision, or give a local build folder"
        ) from exc


def read_table(folder: Path, name: str) -> pl.DataFrame | None:
    """Every row of a table, its files in name order (None: the build has no such table)."""
    files = sorted((folder / name).glob("*.parquet"))
    if not files:
        return None
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
