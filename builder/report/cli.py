"""``episodes report [DIR] [--out FILE.html] [--against OTHER] [--tokenizer PATH]``.

Errors are :class:`builder.errors.UserError` s (a missing or incomplete build folder, a stale
rejects file: exit 1), printed in one line by ``builder.cli``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report",
        help="write a self-contained HTML quality report of a build",
        description="Reads a build folder (its manifest, Parquet files and rejects file) and "
        "writes one HTML file that opens offline: the funnel, rejects and checks with "
        "examples, distributions, lengths, splits, sample rows, and changes against another "
        "build.",
    )
    p.add_argument(
        "build_dir",
        nargs="?",
        type=Path,
        help="build folder (default: [output] out, build/dataset)",
    )
    p.add_argument(
        "--out", type=Path, metavar="FILE.html", help="default: beside DIR, DIR-report.html"
    )
    p.add_argument(
        "--against",
        type=Path,
        metavar="OTHER",
        help="another build folder, or its manifest.json (e.g. the previous release's)",
    )
    p.add_argument(
        "--tokenizer",
        type=Path,
        metavar="PATH",
        help="a local Hugging Face tokenizer (tokenizer.json or its folder): token lengths",
    )
    p.add_argument(
        "--rejects",
        type=Path,
        metavar="FILE",
        help="the build's rejects file (default: [output] rejects, else DIR/../rejects.jsonl)",
    )
    p.add_argument("--config", type=Path, help="dataset.toml (default: ./dataset.toml if any)")
    return p


def _locations(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The build folder and its rejects file: named, else from the config's [output]."""
    from builder.config import find_config, load_config

    config = load_config(find_config(args.config, Path.cwd()))
    folder = args.build_dir or config.out
    rejects = args.rejects
    if (
        rejects is None
        and folder.resolve() == config.out.resolve()
        and not _records_rejects(folder)
    ):
        rejects = config.rejects
    return folder, rejects


def _records_rejects(folder: Path) -> bool:
    """The build's manifest names its rejects file (builds since that was recorded)."""
    from schemas.manifest import ManifestError, read_manifest

    try:
        return isinstance((read_manifest(folder).get("rejects") or {}).get("file"), str)
    except ManifestError:
        return False


def _check_page(page: Path | None, rejects: Path | None) -> None:
    """The page is written over ``page``: never over the rejects file, nor over an existing
    file that is not a page."""
    from builder.config import ConfigError

    if page is None:
        return
    if rejects is not None and page.resolve() == rejects.resolve():
        raise ConfigError(f"--out {page} is the build's rejects file: name the page FILE.html")
    if page.exists() and page.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"--out {page} exists and is not a page: name the page FILE.html")


def _clear_leftovers(folder: Path, rejects: Path | None) -> None:
    """What a build killed outright left beside the folder goes before it is read."""
    from builder.fs import leftovers

    line = leftovers.said(leftovers.remove(folder, rejects))
    if line:
        print(f"episodes report: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from builder.report.page import Options, write_report

    folder, rejects = _locations(args)
    _check_page(args.out, rejects)
    _clear_leftovers(folder, rejects)
    written = write_report(folder, args.out, rejects, Options(args.against, args.tokenizer))
    print(f"{written.path} ({written.bytes / 1e6:.2f} MB, {written.seconds:.1f} s)")
    return 0
