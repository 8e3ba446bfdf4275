"""Publish a build folder to the Hugging Face Hub as an immutable, tagged release.

The flow: gate the build (digests, checks) → read the repository (tags, files, previous
release's manifest) → refuse an existing or non-increasing version → stage a copy of the
build with the release recorded in its card and manifest (data files hard-linked, untouched)
→ plan (add / change / delete, new vs already-present bytes) → one commit → tag ``vX.Y.Z``.

A dry run stops after the plan and writes nothing, locally or on the Hub. Any failure before
the commit leaves the repository as it was; the commit itself is atomic on the Hub, and the
only step after it is the tag, which a re-run of the same command adds without re-uploading.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from builder.errors import DataRefused, EnvironmentProblem
from builder.fs.releases import causes, describe, from_the_hub
from builder.publish.changelog import (
    changelog_markdown,
    default_config,
    make_release,
)
from builder.publish.gate import (
    GateRefused,
    check_build,
    read_manifest,
)
from builder.publish.hub import (
    Hub,
    HubUnavailable,
    TokenError,
    find_token,
    is_http_error,
    unavailable,
)
from builder.publish.plan import LocalFile, Plan, format_plan, make_plan, totals
from builder.publish.versions import (
    Version,
    VersionError,
    VersionRefused,
    check_new_version,
    release_versions,
)
from builder.report.folder import rejects_note
from schemas.manifest import CARD, MANIFEST

__all__ = [
    "GateRefused",
    "HubUnavailable",
    "PublishFailed",
    "PublishOptions",
    "PublishResult",
    "TokenError",
    "VersionError",
    "VersionRefused",
    "VisibilityRefused",
    "publish",
]


class VisibilityRefused(DataRefused, RuntimeError):
    """A release asked to be private, for a repository that exists and is public."""


class PublishFailed(EnvironmentProblem, RuntimeError):
    """The publish started writing to the Hub and did not finish (see the message)."""


@dataclass(frozen=True)
class PublishOptions:
    build_dir: Path
    repo: str
    version: str
    private: bool = False
    dry_run: bool = False
    message: str | None = None
    allow_failed_checks: bool = False
    allow_unredacted: bool = False


@dataclass
class PublishResult:
    plan: Plan | None  # None: the version was already this build's release
    commit: str | None  # None for a dry run
    url: str | None


def _scrub(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def _local_files(
    folder: Path, digests: Mapping[str, str], card: bytes, manifest: bytes
) -> list[LocalFile]:
    files = [
        LocalFile(rel, (folder / rel).stat().st_size, sha, source=folder / rel)
        for rel, sha in digests.items()
    ]
    files.append(LocalFile.from_bytes(CARD, card))
    files.append(LocalFile.from_bytes(MANIFEST, manifest))
    return files


def stage(build_dir: Path, digests: Mapping[str, str]) -> Path:
    """A copy of the build to publish from: data files are hard links (copies across file
    systems), so staging costs no disk and the build itself is never touched; the card and
    manifest are copies, replaced by the release's own before the upload. Its name holds
    the process's id: a publish killed outright leaves it, and the next command into the
    folder (``builder.fs.leftovers``) removes it once that process is gone."""
    prefix = f".{build_dir.name}.release.{os.getpid()}."
    try:  # beside the build, where hard links work
        staged = Path(tempfile.mkdtemp(prefix=prefix, dir=build_dir.parent))
    except OSError:  # a read-only parent (a CI artifact): the system's temporary folder
        staged = Path(tempfile.mkdtemp(prefix=prefix))
    for rel in digests:
        target = staged / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(build_dir / rel, target)
        except OSError:
            shutil.copy2(build_dir / rel, target)
    for name in (CARD, MANIFEST):
        if (build_dir / name).is_file():
            shutil.copy2(build_dir / name, staged / name)
    return staged


def publish(options: PublishOptions, out: TextIO | None = None) -> PublishResult:
    """Publish (or, with ``dry_run``, plan) a release; raises the errors listed in __all__."""
    out = out or sys.stdout
    version = Version.parse(options.version)
    manifest = read_manifest(options.build_dir)
    if options.dry_run:
        return _run(options, version, manifest, options.build_dir, out)
    # What is uploaded is what is verified: the layout is checked here, the digests on the
    # staged copy the upload reads from (so every file is hashed once, not twice).
    layout = check_build(
        options.build_dir,
        manifest,
        options.allow_failed_checks,
        digests=False,
        allow_unredacted=options.allow_unredacted,
    )
    staged = stage(options.build_dir, layout)
    try:
        return _run(options, version, manifest, staged, out)
    except GateRefused as exc:  # name the build, not the staging folder
        raise GateRefused(options.build_dir, exc.problems) from None
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _run(
    options: PublishOptions,
    version: Version,
    manifest: Mapping[str, Any],
    folder: Path,
    out: TextIO,
) -> PublishResult:
    # The gate, before any network: failed checks, then every digest.
    digests = check_build(
        folder, manifest, options.allow_failed_checks, allow_unredacted=options.allow_unredacted
    )
    card_text = (folder / CARD).read_text(encoding="utf-8")
    config_name = default_config(card_text)

    token = find_token()
    hub = Hub(options.repo, token)
    try:
        if token or not options.dry_run:
            user = hub.whoami()
            print(f"authenticated to {hub.endpoint} as {user}", file=out)
        else:
            print(
                "no token found: planning with anonymous read access (a private repository "
                "and its releases are not visible: the plan may then say it will be created, "
                "and the version is checked only when publishing)",
                file=out,
            )
        remote = hub.state()
        if version.tag in remote.tags and _published_as_is(
            hub, options.repo, version, remote.tags, manifest, card_text, config_name
        ):
            # a rerun after the release was made (the answer lost, the job killed): done
            target = remote.tags[version.tag]
            url = f"{hub.endpoint}/datasets/{options.repo}/tree/{version.tag}"
            print(
                f"{options.repo} {version.tag} is already this build's release (commit "
                f"{target[:12]}): nothing to do\n  {url}",
                file=out,
            )
            return PublishResult(None, target, url)
        if remote.exists and options.private and not remote.private:
            raise VisibilityRefused(
                f"{options.repo} exists and is public, and this release is to be private "
                "(--private, or [publish] private): make the repository private on the Hub "
                "first, or publish it with --public"
            )
        previous = check_new_version(version, remote.tags)
        previous_manifest = hub.manifest(previous[1]) if previous else None
    except (TokenError, VersionRefused, VisibilityRefused):
        raise
    except HubUnavailable as exc:
        exc.args = (_scrub(str(exc), token),)
        raise
    except Exception as exc:
        if not from_the_hub(exc):  # the builder's own error: an internal error, not the Hub
            raise
        error = unavailable(f"cannot read {options.repo} on the Hub", exc)
        error.args = (_scrub(str(error), token),)
        raise error from exc

    release, card, new_manifest = make_release(
        options.repo, version, previous, previous_manifest, manifest, card_text, config_name
    )
    if not options.dry_run:  # the staged copy becomes the release
        (folder / CARD).write_bytes(card)
        (folder / MANIFEST).write_bytes(new_manifest)
    files = _local_files(folder, digests, card, new_manifest)
    plan = make_plan(
        options.repo, version, previous, files, remote, options.private, previous_manifest
    )
    print(format_plan(plan, options.build_dir), file=out)
    note = rejects_note(options.build_dir, manifest)  # not uploaded: where it stays
    if note is not None:
        print(note, file=out)
    if previous and previous_manifest and previous_manifest.get("files") == manifest["files"]:
        print(
            f"note: the data files are those of {previous[1]}: this release changes only the "
            "version and the card",
            file=out,
        )
    if options.dry_run:
        notes = "\n".join(f"  {x}" if x else "" for x in changelog_markdown(release).split("\n"))
        print(f"release notes (the card's Release section):\n{notes}", file=out)
        print("dry run: nothing was uploaded, created or tagged", file=out)
        return PublishResult(plan, None, None)
    try:
        commit = _push(hub, plan, options, release)
    except (PublishFailed, TokenError) as exc:
        raise type(exc)(_scrub(str(exc), token)) from exc.__cause__
    url = f"{hub.endpoint}/datasets/{options.repo}/tree/{version.tag}"
    print(
        f"published {options.repo} {version.tag}: commit {commit[:12]}\n"
        f"  files: {totals(plan)}\n"
        f"  {url}\n"
        f'  load it with: load_dataset("{options.repo}", "{config_name}", '
        f'revision="{version.tag}")',
        file=out,
    )
    return PublishResult(plan, commit, url)


def _published_as_is(
    hub: Hub,
    repo: str,
    version: Version,
    tags: Mapping[str, str],
    manifest: Mapping[str, Any],
    card_text: str,
    config_name: str,
) -> bool:
    """Whether the release tagged ``version`` is exactly the one this build would make: its
    manifest, which records every data file's digest and the card's, is the one computed here
    against the release before it."""
    earlier = {v: t for v, t in release_versions(tags).items() if v < version}
    previous = (max(earlier), earlier[max(earlier)]) if earlier else None
    previous_manifest = hub.manifest(previous[1]) if previous else None
    _, _, expected = make_release(
        repo, version, previous, previous_manifest, manifest, card_text, config_name
    )
    return hub.manifest(version.tag) == json.loads(expected)


def _push(hub: Hub, plan: Plan, options: PublishOptions, release: Mapping[str, Any]) -> str:
    message = options.message or f"Release {plan.tag}"
    description = changelog_markdown(release)
    baseline = plan.parent_commit
    try:
        if plan.create_repo:
            hub.create_repo(options.private)
            baseline = hub.head()
        commit = hub.commit(plan, message, description)
    except Exception as exc:
        if not from_the_hub(exc):
            raise
        if is_http_error(exc, 401, 403):
            raise TokenError(
                f"the token has no write access to {plan.repo} (HTTP "
                f"{exc.response.status_code}): use a token of an account or organization "
                f"that owns {plan.repo.split('/')[0]}"
            ) from exc
        raise PublishFailed(_interrupted(hub, plan, baseline, exc)) from exc
    for attempt in range(3):
        try:
            hub.tag(plan.tag, commit, message)
            return commit
        except Exception as exc:
            try:
                target = hub.tag_target(plan.tag)
            except Exception:
                target = None
            if target == commit:  # the tag was created; only the answer was lost
                return commit
            if target is not None:
                raise PublishFailed(
                    f"the release commit {commit[:12]} is on main but {plan.tag} was meanwhile "
                    f"created elsewhere, at {target[:12]}: publish a new version"
                ) from exc
            if attempt == 2:
                raise PublishFailed(
                    f"the release commit {commit[:12]} is on main but tagging it {plan.tag} "
                    f"failed ({describe(exc)}); run the same command again to add "
                    "the tag (nothing is uploaded twice)"
                ) from exc
    raise AssertionError("unreachable")


def _interrupted(hub: Hub, plan: Plan, baseline: str | None, exc: BaseException) -> str:
    import httpx2

    reason = describe(exc)
    try:
        head = hub.head()
    except Exception:
        return (
            f"publishing {plan.tag} failed ({reason}); the repository state could not be "
            "checked. The Hub applies a commit entirely or not at all: run the same command "
            "again to finish (files already uploaded are not sent twice)"
        )
    if head == baseline and any(isinstance(c, httpx2.TimeoutException) for c in causes(exc)):
        # the Hub has the whole commit and may still apply it after the answer timed out
        at = f"commit {head[:12]}" if head else "its first commit"
        return (
            f"publishing {plan.tag} failed ({reason}): the Hub did not answer the commit in "
            f"time, and it may still be committed ({plan.repo} was still at {at} when "
            "checked). Running the same command again is safe: the commit names its parent, "
            "so it lands once or not at all, and the rerun tags it if it landed"
        )
    if head == baseline:
        at = f"still at commit {head[:12]}" if head else "unchanged"
        return (
            f"publishing {plan.tag} failed ({reason}); nothing was committed: {plan.repo} is "
            f"{at} and its tags are unchanged. Run the same command again to retry "
            "(files already uploaded are not sent twice)"
        )
    return (
        f"publishing {plan.tag} failed ({reason}) after main moved to {str(head)[:12]}: run "
        "the same command again; it tags that commit if it is this release, or re-plans"
    )
