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
from pathlib import Path
from typing import Any, NoReturn

from builder import errors as exit_codes
from builder.cli import faults
from builder.cli.ingest_workers import ingest_workers
from builder.cli.options import _add_check_options, _with_check_options, load_build_config
from builder.cli.preflight import (
    FolderProblem,
    check_default_config,
    check_folder,
    check_not_an_input,
)
from builder.config import (
    BuildConfig,
    find_config,
    load_config,
)
from builder.engine.arrow_memory import jemalloc_for_arrow
from builder.engine.blas import one_blas_thread
from builder.errors import UserError, first_line, one_line
from schemas.manifest import MANIFEST
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
    b.add_argument(
        "--from",
        dest="from_build",
        metavar="DIR|ORG/NAME@VERSION",
        help="build again from a build's or a release's tables instead of its inputs",
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
    faults.add_timeout_option(b, "a store or database")
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

    from builder.cli import export_jsonl
    from builder.publish import cli as publish_cli
    from builder.report import cli as report_cli

    publish_cli.add_parser(sub)
    report_cli.add_parser(sub)
    export_jsonl.add_parser(sub)
    faults.add_doctor_parser(sub)
    return parser


EXIT_USAGE, EXIT_REJECTED = exit_codes.USAGE, exit_codes.REFUSED
EXIT_STRICT_CHECKS, EXIT_LOCKED = exit_codes.STRICT_CHECKS, exit_codes.LOCKED


def cmd_build(args: argparse.Namespace) -> int:
    faults.set_timeout(args.timeout)  # a bad setting is said before any work
    if not args.from_build:
        return _build(args, load_build_config(args))
    from builder.cli.build_from import check_no_inputs, given_settings, restored_build
    from builder.cli.options import published_name

    check_no_inputs(args.from_build, _named_inputs(args))
    if not Path(args.from_build).is_absolute() and not _is_release(args):
        args.from_build = os.path.abspath(args.from_build)  # the build may run elsewhere
    given = given_settings(args)  # before the config is read (it may move into its folder)
    config = load_build_config(args)
    with restored_build(config, published_name(args.from_build), given) as restored:
        return _build(args, restored)


def _is_release(args: argparse.Namespace) -> bool:
    from builder.restore.folder import is_release

    return is_release(args.from_build)


def _named_inputs(args: argparse.Namespace) -> list[str]:
    flags = ("episodes", "synthetic_questions", "llm_questions", "sessions")
    return [f"--{f.replace('_', '-')}" for f in flags if getattr(args, f, None)]


def _build(args: argparse.Namespace, config: BuildConfig) -> int:
    with ingest_workers(config):
        return _run_build(args, config)


def _run_build(args: argparse.Namespace, config: BuildConfig) -> int:
    check_default_config(config)  # imports the derive stage: after the workers' server starts
    from builder.cli.summary import print_summary
    from builder.engine import build_process
    from builder.fs.output import BuildLocked
    from builder.pipeline import BuildFailed, UploadFailed, build

    build_process()  # this process is the build's own
    faults.clear_leftovers("build", config.out, config.rejects)
    try:
        with faults.full_disk_said(config):
            report = build(config, progress=not args.no_progress and sys.stderr.isatty())
    except BuildLocked as exc:
        print(f"episodes build: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except UploadFailed as exc:
        print(f"episodes build: built {config.out}, but {exc}; run it again", file=sys.stderr)
        return exit_codes.UNAVAILABLE
    except BuildFailed as exc:
        held = (config.out / MANIFEST).is_file()
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
    from builder.cli.validate_files import validate_files
    from builder.ingest.rejects import RejectsWriter
    from builder.sources.inputs import expand_inputs
    from schemas.episode import Episode, Question

    paths = expand_inputs(args.files)
    if args.rejects is not None:
        check_folder(args.rejects.parent, "--rejects")
        for path in paths:
            check_not_an_input(path, args.rejects, "--rejects")
    model = Question if args.questions else Episode
    config = load_config(find_config(args.config, Path.cwd()))  # hashing, limits
    config = _with_check_options(config, args)
    strict = config if args.strict else None
    with RejectsWriter(args.rejects, echo=sys.stderr) as rejects:  # no half file on a failure
        counts = validate_files(
            paths, model, rejects, config.max_line_bytes, strict, config.hash_precision, config
        )
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


def cmd_export_jsonl(args: argparse.Namespace) -> int:
    from builder.cli import export_jsonl

    return export_jsonl.run(args)


COMMANDS = {
    "build": cmd_build,
    "validate": cmd_validate,
    "schema": cmd_schema,
    "publish": cmd_publish,
    "sessions": cmd_sessions,
    "report": cmd_report,
    "export-jsonl": cmd_export_jsonl,
    "doctor": faults.cmd_doctor,
}


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that cleanups run as for Ctrl-C (a build's
    work folder is removed; the previous build stays as it was)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    one_blas_thread()  # before anything imports numpy
    jemalloc_for_arrow()  # ... or pyarrow
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
        # BaseException): say so, in one line; a full disk no command said more of excepted
        if isinstance(exc, BrokenPipeError) and faults.reader_gone():  # `episodes … | head`
            return exit_codes.READER_GONE
        if debug:
            traceback.print_exc()
        said = (
            faults.disk_full_line(args.command, exc)
            or faults.disk_failed_line(args.command, exc)
            or faults.path_problem_line(args.command, exc)
        )
        if said:
            print(said, file=sys.stderr)
            return exit_codes.UNAVAILABLE
        print(
            f"episodes {args.command}: internal error: {type(exc).__name__}: {first_line(exc)}"
            f" — this is a bug; rerun as `episodes --debug {args.command} …` for the"
            " traceback and report it",
            file=sys.stderr,
        )
        return exit_codes.INTERNAL
    finally:
        os.chdir(cwd)
