"""Command-line options made into a ``BuildConfig``: the build's, and the check options that
build and validate share."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import replace
from pathlib import Path

from builder.cli.preflight import (
    check_output,
    check_ray_address,
)
from builder.config import (
    MAX_WORKERS,
    BuildConfig,
    ConfigError,
    find_config,
    load_config,
    parse_precision,
)
from builder.errors import require
from builder.fs.named_file import replaced
from builder.fs.releases import HUB_RELEASE
from builder.fs.uris import is_uri


def _add_check_options(parser: argparse.ArgumentParser) -> None:
    """How the integrity checks read hashes and answers: build and validate alike."""
    parser.add_argument(
        "--hash-precision",
        type=_precision,
        metavar="exact|N",
        help="hash scheme of the capture side: exact (default) or floats rounded to N places",
    )
    parser.add_argument(
        "--answer-tolerance",
        type=float,
        metavar="T",
        help="also verify answers by value within T, as the capture code does (its T: 0.1)",
    )


def _with_check_options(config: BuildConfig, args: argparse.Namespace) -> BuildConfig:
    if args.answer_tolerance is not None and not 0 <= args.answer_tolerance < math.inf:
        raise ConfigError(f"--answer-tolerance {args.answer_tolerance}: must be a finite 0 or more")
    if args.answer_tolerance is not None:
        config = replace(config, answer_tolerance=args.answer_tolerance)
    if args.hash_precision is not None:  # "exact" must override a config's precision
        config = replace(config, hash_precision=parse_precision(args.hash_precision))
    return config


def _precision(text: str) -> int | str:
    try:
        return "exact" if parse_precision(text) is None else int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values is not None else None


def _local(spec: str | None) -> str | None:
    """``--previous`` as the build reads it after moving into the config's folder."""
    if spec is None or (HUB_RELEASE.match(spec) and not os.path.exists(spec)):
        return spec
    return os.path.abspath(spec)


def published_name(spec: str) -> str:
    """A path given on the command line (made absolute, as the build may move into the
    config's folder) as the manifest records it: relative to the folder the build runs in
    when it lies inside it, so no local folder name is published; else as it is."""
    if not os.path.isabs(spec) or not _inside(spec, Path.cwd()):
        return spec
    return Path(os.path.abspath(spec)).relative_to(Path.cwd()).as_posix()


def load_build_config(args: argparse.Namespace) -> BuildConfig:
    if args.upload_to is not None and not is_uri(args.upload_to):
        raise ConfigError(f"--upload-to {args.upload_to}: not an object-store URI (s3://…)")
    if args.workers is not None and not 0 <= args.workers <= MAX_WORKERS:
        raise ConfigError(
            f"--workers {args.workers}: must be 0 (automatic) to {MAX_WORKERS} (processes)"
        )
    if args.max_reject_ratio is not None and not 0.0 <= args.max_reject_ratio <= 1.0:
        raise ConfigError(f"--max-reject-ratio {args.max_reject_ratio}: must be from 0 to 1")
    config = load_config(find_config(args.config, Path.cwd()))
    config = config.with_overrides(
        episodes=_tuple(args.episodes),
        synthetic_questions=_tuple(args.synthetic_questions),
        llm_questions=_tuple(args.llm_questions),
        sessions=args.sessions,
        out=args.out,
        rejects=args.rejects,
        upload_to=args.upload_to,
        max_reject_ratio=args.max_reject_ratio,
        strict=args.strict,
        workers=args.workers,
        engine=args.engine,
        ray_address=args.ray_address,
        cache_dir=args.cache_dir,
        split_group_by=args.split_by,
        split_previous=_local(args.previous),
    )
    if args.decontaminate:
        evals = tuple(os.path.abspath(spec) for spec in args.decontaminate)
        config = config.with_overrides(decontamination_evals=config.decontamination_evals + evals)
    config = _with_check_options(config, args)
    config, folder = relative_to_config_folder(config)
    if folder is not None and folder != Path.cwd():  # it reads inputs by the names it publishes
        os.chdir(folder)
    config = replace(
        config,
        decontamination_evals=tuple(map(published_name, config.decontamination_evals)),
        split_previous=config.split_previous and published_name(config.split_previous),
    )
    inputs = (config.episodes, config.synthetic_questions, config.llm_questions, config.sessions)
    if not any(inputs) and not getattr(args, "from_build", None):  # --from gives them after
        raise ConfigError("nothing to build: give --episodes ([inputs] episodes in dataset.toml)")
    if args.ray_address is not None and config.engine != "ray":  # it would be ignored
        raise ConfigError(
            f"--ray-address {args.ray_address}: the engine is {config.engine!r}; "
            'add --engine ray (or engine = "ray" in dataset.toml)'
        )
    if config.engine == "ray":  # checked before any work starts
        require("ray", "engine = 'ray'", "ray")
        check_ray_address(config.ray_address)
    # as the build takes them (``builder.pipeline.build``): what a link names
    config = replace(config, out=replaced(config.out), rejects=replaced(config.rejects))
    check_output(config)
    if config.split_previous or config.decontamination_evals:  # imports the derive stage
        from builder.derive.splits.plan import check_held_out_inputs

        check_held_out_inputs(config)
    if config.sessions:
        from builder.sessions.db import check_database

        check_database(config.sessions)
    return config


def relative_to_config_folder(config: BuildConfig) -> tuple[BuildConfig, Path | None]:
    """The config with its inputs named relative to the config file's folder, and that folder
    (a build run from it reads them), when every local input lies inside it; else ``config``
    unchanged and None (also when it is the working directory and the inputs are already
    named relative to it). The names go into every row, reject, manifest and card, so
    ``--config /checkout/dataset.toml`` from anywhere, the checkout included, builds the
    dataset that ``episodes build`` in the checkout builds, byte for byte, and publishes no
    local folder names. Outputs become absolute, where they were meant."""
    if config.config_path is None:
        return config, None
    folder = Path(os.path.abspath(config.config_path.parent))
    sqlite = "sqlite:///"
    db = config.sessions[len(sqlite) :] if config.sessions.startswith(sqlite) else None
    patterns = [*config.episodes, *config.synthetic_questions, *config.llm_questions]
    local = [p for p in patterns if not is_uri(p)] + ([db] if db else [])
    if not local or not all(_inside(p, folder) for p in local):
        return config, None
    if folder == Path.cwd() and not any(os.path.isabs(p) for p in local):
        return config, None  # run from the folder, named relative to it: nothing to change

    def named(items: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(i if is_uri(i) else _relative(i, folder) for i in items)

    def absolute(path: Path | None) -> Path | None:
        return None if path is None else path.absolute()

    return replace(
        config,
        episodes=named(config.episodes),
        synthetic_questions=named(config.synthetic_questions),
        llm_questions=named(config.llm_questions),
        sessions=sqlite + _relative(db, folder) if db else config.sessions,
        out=config.out.absolute(),
        rejects=config.rejects.absolute(),
        cache_dir=absolute(config.cache_dir),
        config_path=Path(config.config_path.name),
    ), folder


def _inside(path: str, folder: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(folder)


def _relative(path: str, folder: Path) -> str:
    return Path(os.path.abspath(path)).relative_to(folder).as_posix()
