"""Where a build's tables are: a local build folder, or a release on the Hub
(``org/name@vX.Y.Z``), downloaded with only the files the restore reads."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from builder.errors import UsageError
from builder.fs import recorded_files
from builder.fs.releases import HUB_RELEASE, ReleaseUnreadable, download_release
from schemas.manifest import MANIFEST, ManifestError, read_manifest

# The tables an episode's lines are rebuilt from, and the sessions'
EPISODE_TABLES = ("questions", "episodes", "traces", "turns", "hooks", "corrections", "messages")
SESSION_TABLES = ("sessions", "actions")


class NoBuild(UsageError):
    """The folder or release holds no build this restore can read."""


def is_release(spec: str) -> bool:
    """``org/name@vX.Y.Z`` that is not also a local path."""
    return bool(HUB_RELEASE.match(spec)) and not Path(spec).exists()


_SAID = {
    recorded_files.OUTSIDE: f"not a path inside the build folder, yet {MANIFEST} lists it",
    recorded_files.MISSING: f"{MANIFEST} lists it, but it is not there",
    recorded_files.CHANGED: f"not the file {MANIFEST} records (its sha256 differs): changed"
    " after the build",
    recorded_files.UNRECORDED: f"not a file {MANIFEST} lists",
}


class DamagedBuild(UsageError):
    """A file of the build's tables is not the one its manifest records."""

    hint = "rebuild it, or restore from an intact copy (its release on the Hub)"


def build_folder(spec: str, tables: tuple[str, ...]) -> Path:
    """The local folder holding ``spec``'s manifest and ``tables`` (downloaded for a
    release), each table's files those its manifest records (``check_files``)."""
    if not is_release(spec):
        folder = Path(spec)
        if not (folder / MANIFEST).is_file():
            raise NoBuild(
                f"{spec}: no build there (no {MANIFEST}); give a build folder or org/name@version"
            )
        check_files(folder, tables)
        return folder
    folder = _download(spec, tables)
    try:
        check_files(folder, tables)
    except DamagedBuild as exc:  # the Hub's copy was checked when published: the cache's changed
        exc.args = (f"{spec}: {exc.args[0].removeprefix(f'{folder}: ')}",)
        repo = spec.split("@", 1)[0]
        exc.hint = (
            f"its copy in the Hub's cache ({folder.parents[1]}) changed after the download: "
            f"remove it (`hf cache rm dataset/{repo}`) and run again"
        )
        raise
    return folder


def check_files(folder: Path, tables: tuple[str, ...]) -> None:
    """Refuse a build whose table files are not those its manifest lists, byte for byte: a
    truncated, replaced, renamed, added or missing file would otherwise be read as the
    build's rows (or fail deep in a reader). A manifest that lists no files is refused too:
    every builder whose tables can be restored writes the list, so one without it was cut
    or edited, and nothing could be checked."""
    try:
        manifest = read_manifest(folder)
    except ManifestError as exc:
        raise NoBuild(f"{folder}: {exc}; the folder is not a whole build") from exc
    listed = manifest.get("files")
    if not isinstance(listed, dict) or not listed:
        raise DamagedBuild(
            f"{folder}: {MANIFEST} lists no files (its files were cut or edited), so the "
            "tables cannot be checked"
        )
    for table in tables:
        recorded = {
            path: str(digest)
            for path, digest in listed.items()
            if str(path).startswith(f"{table}/") and str(path).endswith(".parquet")
        }
        present = [f"{table}/{f.name}" for f in (folder / table).glob("*.parquet")]
        for path, what in recorded_files.differences(folder, recorded, present):
            raise DamagedBuild(f"{folder}: {path}: {_SAID[what]}")


def _download(spec: str, tables: tuple[str, ...]) -> Path:
    """The release's files (the Hub out of reach, a token it refuses, a full cache: said
    by ``download_release``, each in one line)."""
    try:
        return download_release(spec, tables)
    except ReleaseUnreadable as exc:
        missing = NoBuild(f"{spec}: cannot read that release from the Hub: {exc}")
        missing.hint = exc.hint
        raise missing from exc


def read_table(folder: Path, name: str) -> pl.DataFrame | None:
    """Every row of a table, its files in name order (None: the build has no such table)."""
    return read_files(sorted((folder / name).glob("*.parquet")))


def read_files(files: list[Path]) -> pl.DataFrame | None:
    """The rows of ``files`` (None: no file). A file its manifest lists with the right
    sha256 that is no Parquet (the build wrote it so, or it was listed again after an edit)
    is a damaged build, said in one line."""
    if not files:
        return None
    frames = []
    for file in files:
        try:
            frames.append(pl.read_parquet(file))
        except (pl.exceptions.PolarsError, OSError) as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DamagedBuild(
                f"{file.parent.parent}: {file.parent.name}/{file.name}: cannot be read as "
                f"Parquet ({detail})"
            ) from exc
    return pl.concat(frames, how="diagonal_relaxed")
