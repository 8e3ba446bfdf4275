"""The ``episodes`` command (also ``python -m builder``).

Exit codes are in ``builder.exit_codes``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import traceback
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from builder import exit_codes
from builder.config import (
    HUB_RELEASE,
    BuildConfig,
    ConfigError,
    find_config,
    load_config,
    parse_precision,
    relative_to_config_folder,
)
from builder.errors import UserError, one_line, require
from builder.preflight import (
    FolderProblem,
    check_default_config,
    check_folder,
    check_not_an_input,
    check_output,
    check_ray_address,
)
from builder.storage import is_uri
from schemas.vocabulary import GROUP_POLICIES


class _Once(argparse.Action):
    """A flag that takes one value: given twice, the first would be dropped unseen."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, *_: Any
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{'/'.join(self.option_strings)} given twice: a build reads one")
        setattr(namespace, self.dest, values)


# What an episode file or glob given without its flag looks like
_EPISODE_FILE = re.compile(r"\.(?:jsonl|ndjson|json)(?:\.gz|\.zst)?$|\*")


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, like every other mistake (subcommands inherit it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} — see `{self.prog} --help`\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """As argparse's, but an unknown flag is named by the command it was given to
        (``episodes build: unrecognized arguments: --nope``), not by the top level."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            message = f"unrecognized arguments: {' '.join(extras)}"
            files = [e for e in extras if _EPISODE_FILE.search(e) and "://" not in e]
            if getattr(parsed, "command", None) == "build" and files == extras:
                # ``episodes build x.jsonl``, as ``validate`` takes them: say where they go.
                message += f"; input files go after a flag: --episodes {' '.join(files)}"
            _command_parser(self, parsed).error(message)
        return parsed


def _command_parser(parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> Any:
    """The (sub)command's own parser that ``parsed`` went through, innermost."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
            if chosen is not None:
                return _command_parser(chosen, parsed)
    return parser


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="episodes", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (or EPISODES_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("build", help="build the dataset folder from episodes (and sessions)")
    b.add_argument("--config", type=Path, help="dataset.toml (default: ./dataset.toml if any)")
    # Given twice, a list flag adds to what it named before, never replaces it.
    files = {"nargs": "+", "action": "extend", "metavar": "GLOB"}
    b.add_argument("--episodes", **files, help="episode JSONL files or globs")
    b.add_argument("--synthetic-questions", **files)
    b.add_argument("--llm-questions", **files)
    b.add_argument(
        "--sessions",
        action=_Once,
        metavar="URL",
        help="one sessions database: sqlite:///path.db|.sql or postgresql://…",
    )
    b.add_argument("--out", type=Path, help="output dataset folder (default build/dataset)")
    b.add_argument("--rejects", type=Path, help="rejects file (default build/rejects.jsonl)")
    b.add_argument("--upload-to", metavar="URI", help="copy the built folder to s3://… gs://…")
    b.add_argument("--max-reject-ratio", type=float, help="refuse the build above this share")
    b.add_argument("--strict", action="store_true", default=None, help="checks become rejects")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.add_argument(
        "--workers",
        type=int,
        help="ingest processes (default 0: one per core for a run of files of 64 MB+; 1: none)",
    )
    b.add_argument("--engine", choices=("local", "ray"), help="where ingest work runs")
    b.add_argument("--ray-address", help="Ray cluster address (default: a local Ray)")
    b.add_argument("--cache-dir", type=Path, help="cache for incremental rebuilds")
    b.add_argument(
        "--split-by",
        choices=GROUP_POLICIES,
        help="questions that share a split (default near_duplicate)",
    )
    b.add_argument(
        "--previous",
        metavar="DIR|ORG/NAME@VERSION",
        help="the build whose split assignment stands (default: the output folder's own)",
    )
    b.add_argument(
        "--decontaminate",
        action="append",
        metavar="FILE[:FIELD]",
        help="an eval set (JSONL, Parquet or dataset folder) no training prompt may overlap; "
        "repeatable",
    )
    _add_check_options(b)

    v = sub.add_parser("validate", help="validate input files without building")
    v.add_argument("files", nargs="+", metavar="GLOB")
    v.add_argument("--questions", action="store_true", help="files are question banks")
    v.add_argument("--rejects", type=Path, help="also write the rejects file here")
    v.add_argument(
        "--strict",
        action="store_true",
        help="a record whose integrity checks fail is rejected too, as in build --strict",
    )
    v.add_argument("--config", type=Path, help="dataset.toml (default: ./dataset.toml if any)")
    _add_check_options(v)

    s = sub.add_parser("schema", help="print the JSON Schema of an episode line")
    s.add_argument("--out", type=Path, help="write to this file instead of stdout")

    sessions = sub.add_parser("sessions", help="interactive-session databases")
    sessions_sub = sessions.add_subparsers(
        dest="sessions_command", required=True, metavar="COMMAND"
    )
    init = sessions_sub.add_parser("init", help="create the sessions and actions tables")
    init.add_argument("url", help="sqlite:///path.db or postgresql://user@host/db")

    from builder.publish import cli as publish_cli
    from builder.report import cli as report_cli

    publish_cli.add_parser(sub)
    report_cli.add_parser(sub)
    return parser


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
    if config.sessions:
        from builder.sessions.db import check_database

        check_database(config.sessions)
    return config


EXIT_USAGE, EXIT_REJECTED = exit_codes.USAGE, exit_codes.REFUSED
EXIT_STRICT_CHECKS, EXIT_LOCKED = exit_codes.STRICT_CHECKS, exit_codes.LOCKED


def start_ingest_workers(config: BuildConfig) -> None:
    """When the ingest will fork workers (``builder.engine.pool_expected``), their server
    starts before this process imports the build: it imports the ingest on the other core
    meanwhile, and the pool's workers are forked at once when the ingest reaches them."""
    from builder.engine import pool_expected, start_fork_server
    from builder.sources import InputError, expand_inputs

    if config.engine != "local":
        return
    try:
        files = expand_inputs([p for p in config.episodes if not is_uri(p)])
    except InputError:
        return  # the build reports it
    if pool_expected(files, config.workers):
        start_fork_server()


def cmd_build(args: argparse.Namespace) -> int:
    config = load_build_config(args)
    start_ingest_workers(config)
    check_default_config(config)  # imports the derive stage: after the workers' server starts
    from builder.build import BuildFailed, BuildLocked, UploadFailed, build
    from builder.engine.no_pandas import arrow_without_pandas
    from builder.summary import print_summary

    arrow_without_pandas()  # this process hands pyarrow no pandas objects
    try:
        report = build(config, progress=not args.no_progress and sys.stderr.isatty())
    except BuildLocked as exc:
        print(f"episodes build: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except UploadFailed as exc:
        print(f"episodes build: built {config.out}, but {exc}; run it again", file=sys.stderr)
        return exit_codes.UNAVAILABLE
    except BuildFailed as exc:
        held = (config.out / "manifest.json").is_file()
        intact = (
            f"the previous build in {config.out} was left intact"
            if held
            else f"nothing was written to {config.out}"
        )
        print(f"episodes build: refused: {exc} — {intact}", file=sys.stderr)
        return EXIT_STRICT_CHECKS if exc.strict_checks else EXIT_REJECTED
    print_summary(report)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from builder.rejects import RejectsWriter
    from builder.sources import expand_inputs
    from builder.validate_files import validate_files
    from schemas.episode import Episode, Question

    paths = expand_inputs(args.files)
    if args.rejects is not None:
        check_folder(args.rejects.parent, "--rejects")
        for path in paths:
            check_not_an_input(path, args.rejects, "--rejects")
    model = Question if args.questions else Episode
    config = load_config(find_config(args.config, Path.cwd()))  # hashing, limits
    config = _with_check_options(config, args)
    rejects = RejectsWriter(args.rejects, echo=sys.stderr)
    strict = config if args.strict else None
    try:
        counts = validate_files(
            paths, model, rejects, config.max_line_bytes, strict, config.hash_precision
        )
    finally:
        rejects.close()
    for path, c in counts.items():
        print(f"{path}: {c.valid} valid, {c.rejected} rejected, {c.blank} blank")
    return EXIT_REJECTED if rejects.total else 0


def cmd_schema(args: argparse.Namespace) -> int:
    from schemas.json_schema import episode_json_schema

    text = json.dumps(episode_json_schema(), indent=2, sort_keys=True) + "\n"
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise FolderProblem(f"cannot write {args.out}: {exc.strerror}", "--out") from exc
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    from builder.sessions.db import init_database
    from builder.sessions.read import check_tables
    from builder.sessions.urls import redact

    init_database(args.url)  # a DatabaseError is one line, with its exit code and hint
    check_tables(args.url)  # tables that existed may lack a column
    print(f"the sessions and actions tables are in {redact(args.url)} (created where missing)")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from builder.publish import cli as publish_cli

    return publish_cli.run(args)


def cmd_report(args: argparse.Namespace) -> int:
    from builder.report import cli as report_cli

    return report_cli.run(args)


COMMANDS = {
    "build": cmd_build,
    "validate": cmd_validate,
    "schema": cmd_schema,
    "publish": cmd_publish,
    "sessions": cmd_sessions,
    "report": cmd_report,
}


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that cleanups run as for Ctrl-C (a build's
    work folder is removed; the previous build stays as it was)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors; ours is 1
        return EXIT_USAGE if exc.code == 2 else int(exc.code or 0)
    except KeyboardInterrupt:  # the subcommands' modules are still being imported
        print("episodes: interrupted — run it again", file=sys.stderr)
        return exit_codes.INTERRUPTED
    debug = args.debug or os.environ.get("EPISODES_DEBUG", "") not in ("", "0")
    signal.signal(signal.SIGTERM, _terminate)
    cwd = os.getcwd()  # a build runs in its config's folder (``relative_to_config_folder``)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print(f"episodes {args.command}: interrupted — run it again", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except Terminated:
        print(f"episodes {args.command}: terminated — run it again", file=sys.stderr)
        return exit_codes.TERMINATED
    except UserError as exc:
        if debug:
            traceback.print_exc()
        print(one_line(args.command, exc), file=sys.stderr)
        return exc.exit_code
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # a bug, not the user's doing (a library's Rust panic is a
        # BaseException): say so, in one line
        if debug:
            traceback.print_exc()
        print(
            f"episodes {args.command}: internal error: {type(exc).__name__}: {exc}"
            f" — this is a bug; rerun as `episodes --debug {args.command} …` for the"
            " traceback and report it",
            file=sys.stderr,
        )
        return exit_codes.INTERNAL
    finally:
        os.chdir(cwd)
