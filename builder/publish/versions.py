"""Release versions: semantic versions (https://semver.org), tagged ``vX.Y.Z``, immutable.

A new version must be valid semver, must not exist yet as a tag, and must be greater than the
latest release tag, so ``revision="v1.2.0"`` names one set of bytes forever.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import total_ordering

from builder.errors import DataRefused, UsageError

# The official semver 2.0.0 pattern.
SEMVER = re.compile(
    r"^(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+(?P<build>[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
TAG_PREFIX = "v"


class VersionError(UsageError, ValueError):
    """A version that is not semver."""


class VersionRefused(DataRefused, RuntimeError):
    """A valid version that cannot be published (it exists, or is not the newest)."""


@total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: str = ""

    @classmethod
    def parse(cls, text: str) -> Version:
        """``1.2.3`` (a leading ``v`` is accepted: ``v1.2.3`` is the same version)."""
        raw = text.strip()
        if raw[:1] == TAG_PREFIX:
            raw = raw[1:]
        match = SEMVER.match(raw)
        if match is None:
            raise VersionError(
                f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.2.0; "
                "see https://semver.org)"
            )
        pre = tuple(match["pre"].split(".")) if match["pre"] else ()
        return cls(
            int(match["major"]), int(match["minor"]), int(match["patch"]), pre, match["build"] or ""
        )

    @property
    def tag(self) -> str:
        return f"{TAG_PREFIX}{self}"

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        if self.build:
            text += "+" + self.build
        return text

    def _key(self) -> tuple:
        # A pre-release sorts before its release; numeric identifiers before alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __eq__(self, other: object) -> bool:
        # Build metadata does not take part in precedence (semver §10).
        return isinstance(other, Version) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def release_versions(tags: Iterable[str]) -> dict[Version, str]:
    """The tags that are releases (``v`` + semver), by version; other tags are ignored."""
    versions = {}
    for tag in tags:
        if not tag.startswith(TAG_PREFIX):
            continue
        try:
            versions[Version.parse(tag)] = tag
        except VersionError:
            continue
    return versions


def latest(tags: Iterable[str]) -> tuple[Version, str] | None:
    """The newest release and its tag, or ``None`` before the first release."""
    versions = release_versions(tags)
    if not versions:
        return None
    newest = max(versions)
    return newest, versions[newest]


def check_new_version(version: Version, tags: Iterable[str]) -> tuple[Version, str] | None:
    """Refuse an existing or non-increasing version; return the previous release, if any."""
    tags = list(tags)
    if version.tag in tags:
        raise VersionRefused(
            f"{version.tag} already exists: published versions are immutable; "
            "publish the change as a new version"
        )
    clash = release_versions(tags).get(version)
    if clash is not None:
        raise VersionRefused(f"version {version} is already published as {clash}")
    previous = latest(tags)
    if previous is not None and not version > previous[0]:
        raise VersionRefused(
            f"{version} is not greater than the latest release {previous[0]} ({previous[1]}); "
            "versions only go up"
        )
    return previous
