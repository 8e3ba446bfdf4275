"""The Hub's repositories in memory: commits, branches, tags, blobs and LFS objects.

Every mutation happens under one lock and either completes or leaves nothing behind, so a
commit is atomic like on the Hub: a request that dies half-way changes nothing.
"""

from __future__ import annotations

import base64
import fnmatch
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml

from tests.hub_server.git import Entry, blob_oid, commit_oid, lfs_pointer, tree_oids

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
LFS_THRESHOLD = 10 * 1024 * 1024  # files above this never go in git, whatever their content
MAX_REGULAR_FILE = LFS_THRESHOLD
SHORT_OID = re.compile(r"^[0-9a-f]{7,40}$")

# What the Hub writes into a new dataset repository (abridged): binary formats go to LFS.
DEFAULT_GITATTRIBUTES = """\
*.7z filter=lfs diff=lfs merge=lfs -text
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.gz filter=lfs diff=lfs merge=lfs -text
*.npy filter=lfs diff=lfs merge=lfs -text
*.parquet filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.tar filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
*.zst filter=lfs diff=lfs merge=lfs -text
"""


class HubError(Exception):
    """An error the Hub reports with a status, ``X-Error-Code`` and ``X-Error-Message``."""

    def __init__(
        self, status: int, message: str, code: str | None = None, headers: dict | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers or {}


def repo_not_found(repo_id: str) -> HubError:
    return HubError(404, f"Repository {repo_id} not found", "RepoNotFound")


@dataclass
class User:
    name: str
    token: str
    orgs: tuple[str, ...] = ()
    role: str = "write"  # "read" tokens cannot write

    def can_write(self, namespace: str) -> bool:
        return self.role == "write" and (namespace == self.name or namespace in self.orgs)


@dataclass
class Commit:
    oid: str
    parents: tuple[str, ...]
    files: dict[str, Entry]
    title: str
    message: str
    author: str
    date: datetime

    trees: dict[str, str] = field(default_factory=dict, repr=False)  # directory -> tree id

    def __post_init__(self) -> None:
        self.trees = tree_oids(self.files)


@dataclass
class Tag:
    target: str
    message: str


@dataclass
class Repo:
    type: str
    id: str
    private: bool
    created_at: datetime
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, Tag] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)  # git blob id -> content
    lfs: dict[str, bytes] = field(default_factory=dict)  # sha256 -> content
    uploads: dict[str, dict[int, bytes]] = field(default_factory=dict)  # multipart in flight

    @property
    def key(self) -> str:
        return f"{self.type}s/{self.id}"

    def resolve(self, revision: str) -> Commit:
        """A branch, tag, ``refs/heads/…``/``refs/tags/…`` name or a (short) commit id."""
        if revision.startswith("refs/heads/") and revision[11:] in self.branches:
            return self.commits[self.branches[revision[11:]]]
        if revision.startswith("refs/tags/") and revision[10:] in self.tags:
            return self.commits[self.tags[revision[10:]].target]
        if revision in self.branches:
            return self.commits[self.branches[revision]]
        if revision in self.tags:
            return self.commits[self.tags[revision].target]
        if SHORT_OID.match(revision):
            found = [c for oid, c in self.commits.items() if oid.startswith(revision)]
            if len(found) == 1:
                return found[0]
        raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")

    def content(self, entry: Entry) -> bytes:
        return self.lfs[entry.sha256] if entry.sha256 else self.blobs[entry.oid]

    def lfs_patterns(self, commit: Commit) -> list[str]:
        entry = commit.files.get(".gitattributes")
        if entry is None:
            return []
        patterns = []
        for line in self.content(entry).decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) > 1 and "filter=lfs" in parts[1:]:
                patterns.append(parts[0])
        return patterns


def _matches(path: str, pattern: str) -> bool:
    if "/" in pattern:
        return fnmatch.fnmatchcase(path, pattern.lstrip("/"))
    return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)


def is_binary(sample: bytes) -> bool:
    if b"\0" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 4  # a character cut at the end of the sample is fine
    return False


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


class HubState:
    def __init__(self, users: list[User]) -> None:
        self.lock = threading.RLock()
        self.repos: dict[str, Repo] = {}
        self.users = {u.token: u for u in users}
        self._clock = int(time.time())

    # ------------------------------------------------------------------ lookup

    def user(self, authorization: str | None) -> User | None:
        """The user of a ``Bearer`` token; an unknown token is an error, no token is anonymous."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        user = self.users.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        return user

    def repo(self, repo_type: str, repo_id: str, user: User | None, write: bool = False) -> Repo:
        with self.lock:
            repo = self.repos.get(f"{repo_type}s/{repo_id}")
        namespace = repo_id.split("/")[0]
        if repo is None or (repo.private and (user is None or not user.can_write(namespace))):
            raise repo_not_found(repo_id)
        if write:
            if user is None:
                raise HubError(401, "You must be authenticated to write", "RepoNotFound")
            if not user.can_write(namespace):
                raise HubError(403, f"You don't have the rights to write to {repo_id}")
        return repo

    def _tick(self) -> int:
        self._clock = max(self._clock + 1, int(time.time()))
        return self._clock

    # ------------------------------------------------------------------ repos

    def create_repo(self, user: User, repo_type: str, repo_id: str, private: bool) -> Repo:
        namespace = repo_id.split("/")[0]
        if not user.can_write(namespace):
            raise HubError(403, f"You don't have the rights to create a repo under {namespace}")
        with self.lock:
            if f"{repo_type}s/{repo_id}" in self.repos:
                raise HubError(409, f"You already created this {repo_type} repo")
            repo = Repo(repo_type, repo_id, private, datetime.now(UTC))
            data = DEFAULT_GITATTRIBUTES.encode()
            repo.blobs[blob_oid(data)] = data
            files = {".gitattributes": Entry(blob_oid(data), len(data))}
            self._add_commit(repo, "main", None, files, "initial commit", "", user.name)
            self.repos[repo.key] = repo
            return repo

    def delete_repo(self, user: User, repo_type: str, repo_id: str) -> None:
        self.repo(repo_type, repo_id, user, write=True)
        with self.lock:
            del self.repos[f"{repo_type}s/{repo_id}"]

    def _add_commit(
        self,
        repo: Repo,
        branch: str,
        parent: str | None,
        files: dict[str, Entry],
        title: str,
        description: str,
        author: str,
    ) -> Commit:
        message = title + (f"\n\n{description}" if description else "")
        stamp = self._tick()
        tree = tree_oids(files)[""]
        parents = (parent,) if parent else ()
        oid = commit_oid(tree, parents, author, stamp, message)
        commit = Commit(
            oid, parents, files, title, message, author, datetime.fromtimestamp(stamp, UTC)
        )
        repo.commits[oid] = commit
        repo.branches[branch] = oid
        return commit

    # ------------------------------------------------------------------ upload

    def upload_mode(self, repo: Repo, commit: Commit, path: str, size: int, sample: bytes) -> str:
        if size > LFS_THRESHOLD or is_binary(sample):
            return "lfs"
        if any(_matches(path, p) for p in repo.lfs_patterns(commit)):
            return "lfs"
        return "regular"

    def commit(
        self,
        repo: Repo,
        user: User,
        branch: str,
        header: dict[str, Any],
        operations: list[dict[str, Any]],
    ) -> Commit:
        """Apply one commit atomically: validate everything first, then switch the branch."""
        with self.lock:
            if branch not in repo.branches:
                raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
            head = repo.commits[repo.branches[branch]]
            expected = header.get("parentCommit")
            if expected and expected != head.oid:
                raise HubError(
                    412,
                    f"A commit has happened since. Please refresh and try again. "
                    f"(parent {expected} is not the head {head.oid} of {branch})",
                )
            files = dict(head.files)
            blobs: dict[str, bytes] = {}
            for op in operations:
                key, value = op.get("key"), op.get("value") or {}
                path = str(value.get("path", "")).strip("/")
                if key in ("file", "lfsFile", "deletedFile", "deletedFolder") and not path:
                    raise HubError(400, f"Missing path in {key} operation")
                if key == "file":
                    if value.get("encoding") != "base64":
                        raise HubError(400, f"Unsupported encoding for {path}")
                    data = base64.b64decode(value.get("content", ""))
                    if len(data) > MAX_REGULAR_FILE or (data and is_binary(data[:512])):
                        raise HubError(
                            400,
                            f"Your push was rejected because it contains binary files or files "
                            f"larger than 10 MB ({path}). Please use LFS.",
                        )
                    oid = blob_oid(data)
                    blobs[oid] = data
                    files[path] = Entry(oid, len(data))
                elif key == "lfsFile":
                    sha = value.get("oid")
                    if value.get("algo", "sha256") != "sha256" or sha not in repo.lfs:
                        raise HubError(
                            422,
                            f"Your push was rejected because an LFS pointer pointed to a file "
                            f"that does not exist: {path} ({sha})",
                        )
                    size = len(repo.lfs[sha])
                    if value.get("size") not in (None, size):
                        raise HubError(422, f"Size mismatch for the LFS object of {path}")
                    files[path] = Entry(blob_oid(lfs_pointer(sha, size)), size, sha)
                elif key == "deletedFile":
                    if path not in files:
                        raise HubError(
                            404, f"A file with this name doesn't exist: {path}", "EntryNotFound"
                        )
                    del files[path]
                elif key == "deletedFolder":
                    inside = [p for p in files if p.startswith(path + "/")]
                    if not inside:
                        raise HubError(
                            404, f"A folder with this name doesn't exist: {path}", "EntryNotFound"
                        )
                    for p in inside:
                        del files[p]
                else:
                    raise HubError(400, f"Unknown operation {key!r}")
            repo.blobs.update(blobs)
            return self._add_commit(
                repo,
                branch,
                head.oid,
                files,
                str(header.get("summary") or "Update"),
                str(header.get("description") or ""),
                user.name,
            )

    # ------------------------------------------------------------------ refs

    def create_tag(self, repo: Repo, revision: str, tag: str, message: str) -> None:
        with self.lock:
            if not tag or tag in repo.tags or tag in repo.branches:
                raise HubError(409, f"Tag {tag} already exists")
            repo.tags[tag] = Tag(repo.resolve(revision).oid, message)

    def delete_tag(self, repo: Repo, tag: str) -> None:
        with self.lock:
            if tag not in repo.tags:
                raise HubError(404, f"Invalid rev id: {tag}", "RevisionNotFound")
            del repo.tags[tag]

    def create_branch(self, repo: Repo, branch: str, revision: str | None) -> None:
        with self.lock:
            if branch in repo.branches or branch in repo.tags:
                raise HubError(409, f"Reference {branch} already exists")
            repo.branches[branch] = repo.resolve(revision or "main").oid

    def delete_branch(self, repo: Repo, branch: str) -> None:
        with self.lock:
            if branch == "main":
                raise HubError(403, "Cannot delete the main branch")
            if branch not in repo.branches:
                raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
            del repo.branches[branch]

    # ------------------------------------------------------------------ views

    def card_data(self, repo: Repo, commit: Commit) -> dict[str, Any] | None:
        entry = commit.files.get("README.md")
        if entry is None:
            return None
        text = repo.content(entry).decode(errors="replace")
        match = re.match(r"^---\s*\n(.*?)\n---\s*\n", text, re.DOTALL)
        if not match:
            return None
        try:
            data = yaml.load(match.group(1), Loader=_LOADER)
        except yaml.YAMLError:
            return None
        return data if isinstance(data, dict) else None

    def path_info(
        self, repo: Repo, commit: Commit, path: str, expand: bool = False
    ) -> dict[str, Any] | None:
        entry = commit.files.get(path)
        if entry is not None:
            info: dict[str, Any] = {"type": "file", "oid": entry.oid, "size": entry.size}
            info["path"] = path
            if entry.sha256:
                info["lfs"] = {
                    "oid": entry.sha256,
                    "size": entry.size,
                    "pointerSize": entry.pointer_size,
                }
        elif path in commit.trees and path:
            info = {"type": "directory", "oid": commit.trees[path], "size": 0, "path": path}
        else:
            return None
        if expand:
            last = self._last_commit(repo, commit, path)
            info["lastCommit"] = {"id": last.oid, "title": last.title, "date": iso(last.date)}
            if info["type"] == "file":
                info["securityFileStatus"] = {
                    "status": "safe",
                    "avScan": {"virusFound": False, "virusNames": None},
                    "pickleImportScan": None,
                }
        return info

    def _last_commit(self, repo: Repo, commit: Commit, path: str) -> Commit:
        """The newest commit (first-parent walk) that changed ``path`` or anything below it."""

        def state(c: Commit) -> Any:
            if path in c.files:
                return c.files[path].oid
            return c.trees.get(path)

        current = commit
        while current.parents:
            parent = repo.commits[current.parents[0]]
            if state(parent) != state(current):
                return current
            current = parent
        return current

    def listing(self, repo: Repo, commit: Commit, path: str, recursive: bool) -> list[str]:
        prefix = f"{path}/" if path else ""
        names: set[str] = set()
        for file in commit.files:
            if not file.startswith(prefix):
                continue
            rest = file[len(prefix) :].split("/")
            depth = len(rest) if recursive else 1
            for d in range(1, min(depth, len(rest)) + 1):
                names.add(prefix + "/".join(rest[:d]))
        # Like the Hub: directories first, then files, each in path order.
        return sorted(names, key=lambda p: (p in commit.files, p))
