"""Checks a command makes before any work: the paths it writes are safe and writable, the
services it needs answer, and the settings name things that exist. Each failure is one line
naming the setting to change (``builder.errors``)."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from builder.config import BuildConfig, ConfigError
from builder.errors import EnvironmentProblem
from builder.fs.output import foreign_files, refused_rejects
from builder.fs.uris import is_uri


class FolderProblem(EnvironmentProblem):
    """A folder the build writes to cannot be made or written; ``hint`` names the setting."""

    def __init__(self, message: str, setting: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint or f"choose another {setting}"


def _write_probe(folder: Path, setting: str) -> None:
    """Make and remove a file in ``folder``: what ``os.access`` allows is not always what
    the system lets a file be made in (``/proc``, ``/sys``, a file system mounted read-only
    in a container, an immutable folder, for root too)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".episodes-probe-"):
            pass
    except OSError as exc:
        raise FolderProblem(f"{folder}: not writable ({exc.strerror})", setting) from exc


def check_folder(folder: Path, setting: str) -> None:
    """``folder`` exists or can be made, and can be written. Folders made to find out are
    removed again: a build that stops before it starts leaves nothing behind."""
    made: list[Path] = []
    probe = folder.absolute()
    while not probe.exists():
        made.append(probe)
        probe = probe.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise FolderProblem(f"{folder}: not writable", setting)
        _write_probe(folder, setting)
    except FileExistsError as exc:
        raise FolderProblem(f"{exc.filename}: a file, not a folder", setting) from exc
    except NotADirectoryError as exc:
        raise FolderProblem(f"cannot create {folder}: a file is in the way", setting) from exc
    except OSError as exc:
        raise FolderProblem(f"cannot create {folder}: {exc.strerror}", setting) from exc
    finally:
        for path in made:
            try:
                path.rmdir()
            except OSError:
                break


class RayUnavailable(EnvironmentProblem):
    """A Ray cluster address that cannot serve this build."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def check_ray_address(address: str) -> None:
    """An address with a host and port answers (Ray itself retries one that does not for
    minutes, deaf to Ctrl-C), and a ``ray://`` one has Ray's client installed."""
    import importlib.util
    import socket

    if not address or address == "auto":
        return
    if address.startswith("ray://") and importlib.util.find_spec("grpc") is None:
        raise RayUnavailable(
            f"a ray:// address ({address}) needs Ray's client, which is not installed",
            "pip install 'ray[client]'",
        )
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise RayUnavailable(
            f"no Ray cluster answers at {address}: {exc.strerror or exc}",
            "start the cluster or fix --ray-address (ray_address in dataset.toml)",
        ) from exc


def check_default_config(config: BuildConfig) -> None:
    """``[card] default_config`` names a config the build writes."""
    from builder.derive import OBJECTIVE_MODULES
    from schemas.sessions import SESSION_TABLES
    from schemas.tables import TABLES

    names = {*OBJECTIVE_MODULES, *TABLES, "splits", *(SESSION_TABLES if config.sessions else ())}
    if config.card.default_config not in names:
        raise ConfigError(
            f"[card] default_config {config.card.default_config!r} is no config of this build; "
            f"one of: {', '.join(sorted(names))}"
        )


OUT = "--out (or [output] out in dataset.toml)"
REJECTS = "--rejects (or [output] rejects in dataset.toml)"
CACHE = "--cache-dir (or [build] cache_dir in dataset.toml)"


def check_output(config: BuildConfig) -> None:
    """Before any work: the folders the build writes to can be made and written; the output
    folder (which the finished build replaces whole) holds none of the inputs, the rejects
    file, the cache, the working directory nor anything a build did not write; and the
    rejects file (or where a refused build puts its rejects) is no folder and none of the
    inputs."""
    from builder.sources.inputs import expand_inputs

    check_folder(config.out.parent, OUT)
    check_not_working_directory(config.out)
    if config.upload_to:  # a scheme no store serves, or a store out of reach: said now
        from builder.fs import storage

        storage.resolve(config.upload_to)
    inputs = [*config.episodes, *config.synthetic_questions, *config.llm_questions]
    local = expand_inputs([p for p in inputs if not is_uri(p)])
    check_rejects_path(config.rejects, local, REJECTS)
    check_rejects_path(refused_rejects(config.rejects), local, REJECTS)
    out, rejects = config.out.resolve(), config.rejects.resolve()
    if rejects.is_relative_to(out):
        raise FolderProblem(
            f"the rejects file {config.rejects} is inside the output folder {config.out}, "
            "which a build replaces",
            REJECTS,
        )
    if config.cache_dir is not None:
        check_cache(config.cache_dir, config)
    for path in local:
        if Path(path).resolve().is_relative_to(out):
            raise FolderProblem(
                f"the output folder {config.out} holds the input {path}: a build replaces it",
                OUT,
            )
    check_replaceable(config.out)


def check_cache(cache_dir: Path, config: BuildConfig) -> None:
    """The cache can be written and overlaps neither the output folder nor the rejects
    file."""
    check_folder(cache_dir, CACHE)
    check_cache_contents(cache_dir)
    cache, out = cache_dir.resolve(), config.out.resolve()
    if cache.is_relative_to(out) or out.is_relative_to(cache):
        raise FolderProblem(
            f"the cache {cache_dir} and the output folder {config.out} overlap: "
            "a build replaces its output folder whole",
            CACHE,
        )
    if config.rejects.resolve().is_relative_to(cache):
        raise FolderProblem(
            f"the rejects file {config.rejects} is the cache {cache_dir} or inside "
            "it, which the build manages",
            REJECTS,
        )


def check_rejects_path(rejects: Path, inputs: Iterable[str], setting: str) -> None:
    """A rejects file can be written at ``rejects``: its folder can be made and written, and
    it is neither a folder nor one of the ``inputs`` (build and validate alike)."""
    check_folder(rejects.parent, setting)
    if rejects.is_dir():
        raise FolderProblem(f"{rejects} is a folder, not a file for the rejects", setting)
    for path in inputs:
        check_not_an_input(path, rejects, setting)


def check_not_working_directory(out: Path) -> None:
    """The output folder neither is nor holds the working directory: the swap that replaces
    it would move this process's directory away, and every relative path with it."""
    if Path.cwd().resolve().is_relative_to(out.resolve()):
        raise FolderProblem(
            f"the output folder {out} is the current folder or holds it, which a build "
            "replaces whole",
            OUT,
        )


def check_replaceable(out: Path) -> None:
    """A build replaces its output folder whole, deleting what is in it: only a folder a
    build made, or an empty one, may be replaced."""
    if not out.exists():
        return
    if not out.is_dir():
        raise FolderProblem(f"the output folder {out} is a file", OUT)
    foreign = list(itertools.islice(foreign_files(out), 4))
    if foreign:
        shown = ", ".join(foreign[:3]) + (", …" if foreign[3:] else "")
        raise FolderProblem(
            f"the output folder {out} holds files the builder did not write ({shown}), which "
            "a build would delete",
            OUT,
            hint=f"choose another {OUT}, or remove that folder",
        )


def check_cache_contents(folder: Path) -> None:
    """What a cache holds at its top (its lock, index, entry and segment folders) can be
    written: a cache made by another user is writable at its top only, if at all."""
    if not folder.is_dir():  # made by the build: empty
        return
    for item in sorted(folder.iterdir()):
        if not os.access(item, os.W_OK):
            raise FolderProblem(f"{item}: not writable", CACHE)


def check_not_an_input(path: str, written: Path, setting: str) -> None:
    """``written`` (a file a command writes) is not the input ``path``: inputs are never
    modified. Nor is it a folder, which the file could not replace (``validate --rejects``
    checks its file with this alone)."""
    if written.is_dir():
        raise FolderProblem(f"{written} is a folder, not a file to write", setting)
    if Path(path).resolve() == written.resolve():
        raise FolderProblem(f"{written} is the input {path}, which would be overwritten", setting)
