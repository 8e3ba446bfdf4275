"""Every call to the Hugging Face Hub a release makes, through ``huggingface_hub.HfApi``.

Reads: who the token belongs to, the repository (head of ``main``, visibility), its tags and
files, and the previous release's manifest. Writes: create the dataset repository if missing,
one commit with all additions and deletions (``parent_commit`` = the head the plan was made
against, so a concurrent push fails the commit instead of being overwritten), then the tag.

The token comes from ``HF_TOKEN`` or the saved login (``hf auth login``); it is handed to
``HfApi`` and never printed, logged or written anywhere.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from builder.errors import DataRefused, EnvironmentProblem
from builder.fs import releases
from builder.publish.plan import LocalFile, Plan, RemoteFile, RemoteState
from builder.publish.versions import latest
from schemas.manifest import MANIFEST, Manifest, ManifestError, read_manifest

REPO_TYPE = "dataset"
T = TypeVar("T")


class TokenError(DataRefused, RuntimeError):
    """No token, or the Hub rejected it."""


class HubUnavailable(EnvironmentProblem, RuntimeError):
    """The Hub could not be reached or answered with an error."""

    hint = "check the network and HF_ENDPOINT, then run the same command again"


def find_token() -> str | None:
    """``HF_TOKEN`` (or the legacy ``HUGGING_FACE_HUB_TOKEN``), else the saved login."""
    from huggingface_hub import get_token

    return get_token()


def is_http_error(exc: BaseException, *statuses: int) -> bool:
    from huggingface_hub.errors import HfHubHTTPError

    response = getattr(exc, "response", None)
    return isinstance(exc, HfHubHTTPError) and (
        not statuses or (response is not None and response.status_code in statuses)
    )


def retried(read: Callable[..., T]) -> Callable[..., T]:
    """A read of the Hub, tried again on a transient failure (``builder.fs.network``; a
    429's ``Retry-After`` honoured). Writes are not: a commit is checked against the Hub's
    state before it is sent again."""

    @functools.wraps(read)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return releases.retrying_here(lambda: read(*args, **kwargs))

    return wrapper


def unavailable(what: str, exc: BaseException) -> HubUnavailable:
    """``exc``, a call to the Hub that failed every time it was tried, in one line: what
    failed, why (a 429 with the pause the Hub asked for), and what to do."""
    error = HubUnavailable(f"{what}: {releases.describe(exc)}{releases.retried_note(exc)}")
    asked = releases.retry_after(exc)
    if any(releases.status_of(c) == 429 for c in releases.causes(exc)):
        wait = f"wait {asked:g} s" if asked is not None else "wait a while"
        error.hint = f"{wait}, then run the same command again"
    return error


class Hub:
    def __init__(self, repo: str, token: str | None) -> None:
        from huggingface_hub import HfApi

        from builder import __version__

        releases.install_client()
        self.repo = repo
        # token=False: anonymous (a dry run without a token can still read public repos).
        self.api = HfApi(
            token=token if token else False,
            library_name="agent-traces",
            library_version=__version__,
        )
        self.authenticated = bool(token)

    @property
    def endpoint(self) -> str:
        return self.api.endpoint

    # ------------------------------------------------------------------ reads

    def whoami(self) -> str:
        """The account name of the token; ``TokenError`` if it is missing or rejected."""
        if not self.authenticated:
            raise TokenError(
                "no Hugging Face token: set HF_TOKEN or log in with `hf auth login` "
                "(a token with write access to the repository is needed)"
            )
        try:
            info = releases.retrying_here(self.api.whoami)
        except Exception as exc:
            if is_http_error(exc, 401):
                raise TokenError(
                    f"the Hub at {self.endpoint} rejected the token (HTTP 401): it is invalid, "
                    "expired or revoked; set a valid HF_TOKEN or run `hf auth login --force`"
                ) from None
            if is_http_error(exc, 404, 405):  # a server, but not the Hub's API
                raise HubUnavailable(
                    f"{self.endpoint} does not answer like a Hugging Face Hub (HTTP "
                    f"{exc.response.status_code} on its token check): HF_ENDPOINT names "  # type: ignore[attr-defined]
                    "another server"
                ) from exc
            raise unavailable(f"cannot check the token at {self.endpoint}", exc) from exc
        role = ((info.get("auth") or {}).get("accessToken") or {}).get("role")
        if role == "read":
            raise TokenError("the token is read-only: a token with write access is needed")
        return str(info.get("name", "?"))

    @retried
    def state(self) -> RemoteState:
        from huggingface_hub.errors import RepositoryNotFoundError

        try:
            info = self.api.repo_info(self.repo, repo_type=REPO_TYPE)
        except RepositoryNotFoundError:
            return RemoteState(exists=False)
        refs = self.api.list_repo_refs(self.repo, repo_type=REPO_TYPE)
        tags = {t.name: t.target_commit for t in refs.tags}
        head = next((b.target_commit for b in refs.branches if b.name == "main"), info.sha)
        files = self.files(head) if head else {}
        stored = {f.sha256 for f in files.values() if f.sha256}
        newest = latest(tags)  # the Hub keeps the objects of earlier commits too
        if newest is not None and tags[newest[1]] != head:
            stored |= {f.sha256 for f in self.files(tags[newest[1]]).values() if f.sha256}
        return RemoteState(True, bool(info.private), head, files, tags, stored)

    @retried
    def files(self, revision: str) -> dict[str, RemoteFile]:
        from huggingface_hub.hf_api import RepoFile

        entries = self.api.list_repo_tree(
            self.repo, recursive=True, revision=revision, repo_type=REPO_TYPE
        )
        return {
            e.path: RemoteFile(e.path, e.size, e.blob_id, e.lfs.sha256 if e.lfs else None)
            for e in entries
            if isinstance(e, RepoFile)
        }

    @retried
    def manifest(self, revision: str) -> Manifest | None:
        """``manifest.json`` of a revision (e.g. the previous release), or ``None``."""
        from huggingface_hub.errors import EntryNotFoundError

        with tempfile.TemporaryDirectory(prefix="publish-manifest-") as cache:
            try:
                path = self.api.hf_hub_download(
                    self.repo,
                    MANIFEST,
                    repo_type=REPO_TYPE,
                    revision=revision,
                    cache_dir=cache,
                )
            except EntryNotFoundError:
                return None
            try:
                return read_manifest(Path(path))
            except ManifestError as exc:
                if exc.problem == "not_an_object":
                    return None
                raise

    @retried
    def tag_target(self, tag: str) -> str | None:
        refs = self.api.list_repo_refs(self.repo, repo_type=REPO_TYPE)
        return next((t.target_commit for t in refs.tags if t.name == tag), None)

    @retried
    def head(self) -> str | None:
        refs = self.api.list_repo_refs(self.repo, repo_type=REPO_TYPE)
        return next((b.target_commit for b in refs.branches if b.name == "main"), None)

    # ------------------------------------------------------------------ writes

    def create_repo(self, private: bool) -> None:
        self.api.create_repo(self.repo, repo_type=REPO_TYPE, private=private, exist_ok=True)

    def commit(self, plan: Plan, message: str, description: str) -> str:
        """One commit with every addition and deletion; returns its id."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        operations: list[Any] = [
            CommitOperationAdd(c.file.path, _payload(c.file)) for c in plan.committed
        ]
        operations += [CommitOperationDelete(d.path, is_folder=False) for d in plan.deletions]
        if not operations:  # the same bytes are already on main (e.g. a retried publish)
            assert plan.parent_commit is not None
            return plan.parent_commit
        info = self.api.create_commit(
            self.repo,
            operations,
            commit_message=message,
            commit_description=description,
            repo_type=REPO_TYPE,
            revision="main",
            parent_commit=plan.parent_commit,
        )
        return info.oid

    def tag(self, tag: str, commit: str, message: str) -> None:
        self.api.create_tag(
            self.repo, tag=tag, tag_message=message, revision=commit, repo_type=REPO_TYPE
        )


def _payload(file: LocalFile) -> Any:
    return file.data if file.data is not None else str(file.source)
