"""The publish plan: what the release commit adds, changes and deletes, and what it costs.

Files are compared with the repository's current ``main`` by content (sha256 for LFS files,
the git blob id for small text files). An unchanged file is left out of the commit; a file
whose bytes the Hub already stores (e.g. unchanged Parquet under a new name) is committed but
not re-sent. The summary reports both, so a release of a small change is visibly cheap.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from builder.publish.versions import Version
from schemas.manifest import BUILD_FILES

ADD, UPDATE, UNCHANGED = "add", "update", "unchanged"
_SYMBOL = {ADD: "+", UPDATE: "~", UNCHANGED: "="}


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class LocalFile:
    """One file of the release: on disk (``source``) or in memory (``data``)."""

    path: str
    size: int
    sha256: str
    source: Path | None = None
    data: bytes | None = None

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> LocalFile:
        return cls(path, len(data), hashlib.sha256(data).hexdigest(), data=data)

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.source is not None
        return self.source.read_bytes()


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    blob_id: str  # git blob id (of the content, or of the LFS pointer)
    sha256: str | None  # LFS object id; None for a file stored in git


@dataclass
class RemoteState:
    exists: bool
    private: bool | None = None
    head: str | None = None  # commit of main
    files: dict[str, RemoteFile] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)  # tag -> commit
    stored: set[str] = field(default_factory=set)  # sha256 of LFS objects the repo holds


@dataclass(frozen=True)
class FileChange:
    file: LocalFile
    action: str  # ADD, UPDATE or UNCHANGED
    present: bool  # the Hub already has these bytes: nothing to send


@dataclass
class Plan:
    repo: str
    version: Version
    previous: tuple[Version, str] | None
    create_repo: bool
    private: bool
    parent_commit: str | None
    changes: list[FileChange]
    deletions: list[RemoteFile]

    @property
    def tag(self) -> str:
        return self.version.tag

    @property
    def committed(self) -> list[FileChange]:
        return [c for c in self.changes if c.action != UNCHANGED]

    @property
    def new(self) -> list[FileChange]:
        return [c for c in self.changes if not c.present]

    @property
    def present(self) -> list[FileChange]:
        return [c for c in self.changes if c.present]

    @property
    def new_bytes(self) -> int:
        return sum(c.file.size for c in self.new)

    @property
    def present_bytes(self) -> int:
        return sum(c.file.size for c in self.present)


def _same(local: LocalFile, remote: RemoteFile) -> bool:
    if remote.sha256 is not None:
        return remote.sha256 == local.sha256
    return local.size == remote.size and git_blob_id(local.read()) == remote.blob_id


def release_paths(previous_manifest: Mapping | None, remote: RemoteState) -> set[str]:
    """Remote files a release owns (so a new release may delete them): the card, manifest,
    every Parquet file, and whatever the previous release's manifest listed."""
    owned = {p for p in remote.files if p.endswith(".parquet")}
    owned |= BUILD_FILES
    owned |= set(((previous_manifest or {}).get("files") or {}).keys())
    return owned & set(remote.files)


def make_plan(
    repo: str,
    version: Version,
    previous: tuple[Version, str] | None,
    files: Iterable[LocalFile],
    remote: RemoteState,
    private: bool,
    previous_manifest: Mapping | None = None,
) -> Plan:
    changes = []
    local = {f.path: f for f in files}
    for path in sorted(local):
        file = local[path]
        theirs = remote.files.get(path)
        if theirs is not None and _same(file, theirs):
            changes.append(FileChange(file, UNCHANGED, True))
            continue
        action = UPDATE if theirs is not None else ADD
        changes.append(FileChange(file, action, file.sha256 in remote.stored))
    deletions = [
        remote.files[p] for p in sorted(release_paths(previous_manifest, remote) - set(local))
    ]
    return Plan(
        repo=repo,
        version=version,
        previous=previous,
        create_repo=not remote.exists,
        private=private if not remote.exists else bool(remote.private),
        parent_commit=remote.head,
        changes=changes,
        deletions=deletions,
    )


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def totals(plan: Plan) -> str:
    new, present = plan.new, plan.present
    text = (
        f"{len(new)} file(s) new ({human_bytes(plan.new_bytes)} at most to upload: bytes an "
        "older release stored are not sent again either), "
        f"{len(present)} already on main or the latest release "
        f"({human_bytes(plan.present_bytes)} not re-sent)"
    )
    if plan.deletions:
        text += f", {len(plan.deletions)} to delete"
    return text


def format_plan(plan: Plan, build_dir: Path) -> str:
    visibility = "private" if plan.private else "public"
    repo_note = " — will be created" if plan.create_repo else ""
    previous = f"{plan.previous[0]} ({plan.previous[1]})" if plan.previous else "none"
    lines = [
        f"publish {build_dir} → {plan.repo} (dataset, {visibility}{repo_note})",
        f"version {plan.version} (tag {plan.tag}); previous version: {previous}",
    ]
    width = max((len(c.file.path) for c in plan.changes), default=10)
    for change in plan.changes:
        if change.action == UNCHANGED:
            continue
        note = "new file" if change.action == ADD else "changed"
        if change.present:
            note += " (bytes already on the Hub: not re-sent)"
        lines.append(
            f"  {_SYMBOL[change.action]} {change.file.path:<{width}}  "
            f"{human_bytes(change.file.size):>9}  {note}"
        )
    unchanged = [c for c in plan.changes if c.action == UNCHANGED]
    if unchanged:
        size = human_bytes(sum(c.file.size for c in unchanged))
        lines.append(f"  = {len(unchanged)} file(s) unchanged ({size}), left as they are")
    for gone in plan.deletions:
        lines.append(f"  - {gone.path:<{width}}  {human_bytes(gone.size):>9}  deleted")
    lines.append(f"files: {totals(plan)}")
    lines.append(f"then tag the commit {plan.tag}")
    return "\n".join(lines)
