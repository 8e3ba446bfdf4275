"""``episodes publish``: release a build folder to the Hugging Face Hub as ``vX.Y.Z``.

Exit codes (``builder.errors``): 0 published (or planned, with ``--dry-run``; or the
version is already exactly this build's release); 1 usage or configuration error (no
repository, a repository name the Hub refuses, a version that is not semver); 2 refused,
nothing uploaded (the build fails the gate, the version holds another release or is not
greater than the latest, no or a rejected token); 5 the Hub could not be reached or the
publish was interrupted — the repository is left at a consistent state and running the same
command again finishes the release.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from builder import errors as exit_codes

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_FAILED = (
    exit_codes.OK,
    exit_codes.REFUSED,
    exit_codes.USAGE,
    exit_codes.UNAVAILABLE,
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "publish",
        help="publish a build to the Hugging Face Hub as an immutable tagged release",
        description="Upload a build folder as one commit and tag it vX.Y.Z. Defaults come "
        "from dataset.toml ([output] out, [publish] repo and private).",
    )
    p.add_argument("build_dir", nargs="?", type=Path, help="build folder (default: [output] out)")
    p.add_argument("--config", type=Path, help="dataset.toml (default: ./dataset.toml if any)")
    p.add_argument(
        "--repo", metavar="ORG/NAME", help="dataset repository (default: [publish] repo)"
    )
    p.add_argument("--version", required=True, metavar="X.Y.Z", help="semantic version to release")
    visibility = p.add_mutually_exclusive_group()
    visibility.add_argument(
        "--private",
        action="store_true",
        default=None,
        help="create the repository private (default: [publish] private, else public)",
    )
    visibility.add_argument(
        "--public",
        dest="private",
        action="store_false",
        help="create the repository public, whatever [publish] private says",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long the Hub may take to answer a request (default 30; EPISODES_TIMEOUT)",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no upload progress bars (the default when stderr is not a terminal)",
    )
    p.add_argument("--message", metavar="TEXT", help="commit message (default: Release vX.Y.Z)")
    p.add_argument(
        "--allow-failed-checks",
        action="store_true",
        help="publish even though the manifest records failed integrity checks",
    )
    p.add_argument(
        "--allow-unredacted",
        action="store_true",
        help="publish a build made with secret redaction off",
    )
    return p


def _defaults(args: argparse.Namespace) -> tuple[Path, str, bool]:
    from builder.config import find_config, load_config

    config = load_config(find_config(args.config, Path.cwd()))
    build_dir = args.build_dir or config.out
    repo = args.repo or config.publish_repo
    private = args.private if args.private is not None else config.publish_private
    return build_dir, repo, bool(private)


def _invalid_repo_name(repo: str) -> str:
    """Why the Hub would refuse ``repo`` as a name (empty: it would not), asked before any
    request: a bad name is the user's to fix, not a Hub to retry."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        return str(exc).splitlines()[0].replace(f": '{repo}'", "").rstrip(".")
    return ""


def _progress_bars(shown: bool) -> contextlib.AbstractContextManager[object]:
    """The Hub client's upload bars, kept out of logs and pipes (``HF_HUB_DISABLE_PROGRESS_BARS``
    set either way still decides)."""
    if shown or os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") is not None:
        return contextlib.nullcontext()
    from huggingface_hub.utils import disable_progress_bars

    return disable_progress_bars()


def run(args: argparse.Namespace) -> int:
    from builder.config import ConfigError
    from builder.fs.releases import hub_client
    from builder.publish.release import (
        GateRefused,
        HubUnavailable,
        PublishFailed,
        PublishOptions,
        TokenError,
        VersionError,
        VersionRefused,
        VisibilityRefused,
        publish,
    )

    def fail(code: int, message: str) -> int:
        # one line, as every error: a Hub's HTTP error spans several
        text = "; ".join(line.strip() for line in message.splitlines() if line.strip())
        print(f"episodes publish: {text}", file=sys.stderr)
        return code

    from builder.fs import network

    try:
        network.set_timeout(args.timeout)
        network.check()
        build_dir, repo, private = _defaults(args)
    except (ConfigError, network.BadSetting) as exc:
        return fail(EXIT_USAGE, str(exc))
    if not repo or repo.count("/") != 1 or not all(repo.split("/")):
        return fail(
            EXIT_USAGE,
            f"--repo must be ORG/NAME (got {repo!r}); or set repo in [publish] of dataset.toml",
        )
    invalid = _invalid_repo_name(repo)
    if invalid:
        return fail(EXIT_USAGE, f"--repo {repo!r} is not a Hub repository name: {invalid}")
    from builder.fs import leftovers

    line = leftovers.said(leftovers.remove(build_dir))  # a killed build's, before it is read
    if line:
        print(f"episodes publish: {line}", file=sys.stderr)
    options = PublishOptions(
        build_dir=build_dir,
        repo=repo,
        version=args.version,
        private=private,
        dry_run=args.dry_run,
        message=args.message,
        allow_failed_checks=args.allow_failed_checks,
        allow_unredacted=args.allow_unredacted,
    )
    try:
        with _progress_bars(not args.no_progress and sys.stderr.isatty()), hub_client():
            publish(options)  # the Hub client's own notices silenced, its retries ours
    except VersionError as exc:
        return fail(EXIT_USAGE, str(exc))
    except (GateRefused, VersionRefused, VisibilityRefused, TokenError) as exc:
        return fail(EXIT_REFUSED, f"refused: {exc} — nothing was uploaded")
    except HubUnavailable as exc:
        return fail(EXIT_FAILED, f"{exc} — nothing was uploaded; {exc.hint}")
    except PublishFailed as exc:
        return fail(EXIT_FAILED, str(exc))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """``python -m builder.publish.cli --version X.Y.Z …`` (the same as ``episodes publish``)."""
    parser = argparse.ArgumentParser(prog="episodes")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["publish"]:
        argv.insert(0, "publish")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
