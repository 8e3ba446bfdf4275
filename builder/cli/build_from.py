"""``episodes build --from DIR|ORG/NAME@VERSION``: a build made again from the tables of an
earlier build or release, with this builder's rules, without its original inputs.

The earlier build's inputs are written back from its tables (``builder.restore.inputs``)
into a folder beside the output, each named in the new build's rows as it was in the old
one's, its sessions into a SQLite database there; then the build reads them as any inputs.
Rows the earlier build rejected are not in its tables, so they are not read again: the new
build's rejects are its own. The folder is removed when the build ends.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from builder.config import BuildConfig, find_config, given_keys
from builder.errors import EnvironmentProblem, UsageError
from builder.fs.leftovers import restored_inputs
from builder.fs.space import is_disk_full
from builder.restore.folder import EPISODE_TABLES, SESSION_TABLES, build_folder
from builder.restore.inputs import restore_inputs
from builder.restore.settings import check_decontaminated, recorded_settings, with_recorded
from schemas.manifest import MANIFEST, read_manifest


def check_no_inputs(spec: str, named: list[str]) -> None:
    """``--from`` is the build's input: input flags beside it are a mistake."""
    if named:
        raise UsageError(
            f"--from {spec} replaces the build's inputs: drop {', '.join(named)} (or drop "
            "--from to build from them)"
        )


def given_settings(args: argparse.Namespace) -> frozenset[str]:
    """The settings given here, by a flag or by ``dataset.toml``: ``--from`` takes the
    others from the build it rebuilds."""
    flags = {
        "strict": args.strict,
        "max_reject_ratio": args.max_reject_ratio,
        "split_group_by": args.split_by,
        "answer_tolerance": args.answer_tolerance,
        "hash_precision": args.hash_precision,
    }
    given = {name for name, value in flags.items() if value is not None}
    return frozenset(given) | given_keys(find_config(args.config, Path.cwd()))


@contextmanager
def restored_build(
    config: BuildConfig, spec: str, given: frozenset[str] = frozenset()
) -> Iterator[BuildConfig]:
    """``config`` reading what ``spec``'s tables give back, while the context lasts, with
    the settings ``spec`` recorded but those ``given`` here (``builder.restore.settings``)."""
    folder = build_folder(spec, EPISODE_TABLES + SESSION_TABLES)
    manifest = read_manifest(folder)
    config, given_here = with_recorded(
        config, recorded_settings(manifest, folder / MANIFEST), given
    )
    check_decontaminated(manifest, config, given)
    out = config.out.resolve()
    work = restored_inputs(out)
    shutil.rmtree(work, ignore_errors=True)
    made = _first_missing(work.parent)  # the folders made for it go again if left empty
    try:
        work.mkdir(parents=True)
        restored = _restored_inputs(folder, work)
        names = dict(restored.names)
        sessions = ""
        if restored.sessions is not None:
            from builder.sessions.db import ingest, init_database

            sessions = f"sqlite:///{work / 'sessions.db'}"
            init_database(sessions)
            ingest(
                sessions, [("sessions", restored.sessions[0]), ("actions", restored.sessions[1])]
            )
            names[sessions] = restored.sessions_name or sessions
        yield replace(
            config,
            episodes=tuple(restored.episodes),
            synthetic_questions=tuple(restored.banks["synthetic"]),
            llm_questions=tuple(restored.banks["llm"]),
            sessions=sessions,
            segments=tuple(restored.segments),
            cache_dir=None,  # the restored files are new each time: nothing to reuse
            # its questions keep the splits it gave them (also those an earlier version gave,
            # and those it carried), unless another build's are asked for
            split_previous=config.split_previous or spec,
            input_names=tuple(names.items()),
            built_from=tuple(_provenance(spec, folder, given_here).items()),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        _remove_if_empty(work.parent, made)


def _restored_inputs(folder: Path, work: Path) -> Any:
    """``restore_inputs``; a full disk there is one line naming the folder (exit 5)."""
    try:
        return restore_inputs(folder, work)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        full = EnvironmentProblem(f"no space left on the device writing {exc.filename or work}")
        full.hint = (
            "free space there (the inputs written back take about the size of the build's "
            "tables), or choose another --out, and run it again"
        )
        raise full from exc


def _first_missing(folder: Path) -> Path | None:
    """The outermost of ``folder`` and its parents that does not exist yet, if any."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            break
        missing = path
    return missing


def _remove_if_empty(folder: Path, made: Path | None) -> None:
    """``folder`` and its parents up to ``made``, those this command made, when empty."""
    if made is None:
        return
    for path in (folder, *folder.parents):
        try:
            path.rmdir()
        except OSError:
            return  # not empty (the build is there), or gone
        if path == made:
            return


def _provenance(spec: str, folder: Path, given_here: list[str]) -> dict[str, str]:
    manifest = read_manifest(folder)
    release = (manifest.get("release") or {}).get("version")
    record = {
        "source": spec,
        "builder_version": str(manifest.get("builder_version", "")),
        "schema_version": str(manifest.get("schema_version", "")),
        "manifest_sha256": hashlib.sha256((folder / MANIFEST).read_bytes()).hexdigest(),
    }
    if given_here:  # settings this build was given that differ from the source's
        record["settings_given_here"] = ", ".join(given_here)
    return record | ({"release": str(release)} if release else {})
