"""Command-line options made into a ``BuildConfig``: the build's, and the check options that
build and validate share."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

from builder.cli.preflight import (
    check_output,
    check_ray_address,
)
from builder.config import (
    HUB_RELEASE,
    BuildConfig,
    ConfigError,
    find_config,
    load_config,
    parse_precision,
    relative_to_config_folder,
)
from builder.derive.splits.plan import check_held_out_inputs
from builder.errors import require
from builder.fs.storage import is_uri


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
    if args.answer_tolerance is not None and not args.answer_tolerance >= 0:
        raise ConfigError(f"--answer-tolerance {args.answer_tolerance}: must be 0 or more")
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


def load_build_config(args: argparse.Namespace) -> BuildConfig:
    if args.upload_to is not None and not is_uri(args.upload_to):
        raise ConfigError(f"--upload-to {args.upload_to}: not an object-store URI (s3://…)")
    if args.workers is not None and args.workers < 0:
        raise ConfigError(f"--workers {args.workers}: must be 0 (automatic) or more")
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
    inputs = (config.episodes, config.synthetic_questions, config.llm_questions, config.sessions)
    if not any(inputs):
        raise ConfigError("nothing to build: give --episodes ([inputs] episodes in dataset.toml)")
    if args.ray_address is not None and config.engine != "ray":  # it would be ignored
        raise ConfigError(
            f"--ray-address {args.ray_address}: the engine is {config.engine!r}; "
            'add --engine ray (or engine = "ray" in dataset.toml)'
        )
    if config.engine == "ray":  # checked before any work starts
        require("ray", "engine = 'ray'", "ray")
        check_ray_address(config.ray_address)
    check_output(config)
    check_held_out_inputs(config)
    if config.sessions:
        from builder.sessions.db import check_database

        check_database(config.sessions)
    return config
