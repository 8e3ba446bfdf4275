"""A published release, ``org/name@revision`` on the Hub, downloaded in part: what
``--previous`` and ``build --from`` / ``export-jsonl`` read of one; and what a failed call to
the Hub (publish's too, each made by ``hub_http.hub_client``) is said to be.

A download is tried again as any read of a remote (``builder.fs.network``: the timeout, the
retries, the pause a 429 asks for); what it cannot get is one line: the Hub out of reach
(exit 5), a token it refuses (exit 2), a repository or a revision it does not have (exit 1),
a full disk under the Hub's cache (exit 5). A failed download leaves no partial file in the
cache.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from builder.errors import DataRefused, EnvironmentProblem
from builder.fs import network
from builder.fs.hub_http import OUTER, asked_wait, hub_client
from builder.fs.hub_http import install_client as install_client  # publish's Hub client
from builder.fs.space import is_disk_full
from schemas.manifest import MANIFEST

HUB_RELEASE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<revision>[\w./-]+)$")
_BARE_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_QUERY = re.compile(r"(https?://[^\s?'\"]+)\?[^\s'\"]*")  # pre-signed URLs: ``sig=…``


class ReleaseUnreadable(Exception):
    """The Hub has no such release (the repository or the revision); ``hint``: what to do."""

    hint = "check the repository and the version, or give a local build folder"


class HubUnreachable(EnvironmentProblem, RuntimeError):
    """The Hub did not answer, failed, or went away mid-download, every time it was tried."""

    hint = "check the network and HF_ENDPOINT, then run the same command again"


class HubToken(DataRefused, RuntimeError):
    """The Hub refused the token (or asked for one)."""

    hint = "set a valid HF_TOKEN or run `hf auth login --force`, then run it again"


class CacheFull(EnvironmentProblem, OSError):
    """The disk of the Hub's cache filled up during a download."""


def status_of(exc: BaseException) -> int:
    response = getattr(exc, "response", None)
    return int(getattr(response, "status_code", 0) or 0)


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from (the Hub client wraps a connection error)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def transient(exc: BaseException) -> bool:
    """A failure another try may not meet: no connection, a dropped, cut or timed-out one,
    the Hub overloaded or failing (429, 5xx)."""
    import httpx2

    for cause in causes(exc):
        if isinstance(cause, httpx2.TransportError):
            return True
        status = status_of(cause)
        if status == 429 or status >= 500:
            return True
        if isinstance(cause, OSError) and "Consistency check failed" in str(cause):
            return True  # a file shorter than the Hub said: cut off on the way
    return False


def retry_after(exc: BaseException) -> float | None:
    """The seconds a 429 or 503 asked the client to wait (``RateLimit``'s ``t=`` or
    ``Retry-After``: ``hub_http.asked_wait``), if it did."""
    for cause in causes(exc):
        response = getattr(cause, "response", None)
        headers = getattr(response, "headers", None) if response is not None else None
        wanted = asked_wait(status_of(cause), headers) if headers is not None else None
        if wanted is not None:
            return wanted
    return None


def from_the_hub(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the Hub, the network or the disk (the Hub client's own
    errors, a connection's, an ``OSError``), not one of the client's own bugs or of its use
    (a ``TypeError``...): those are the builder's internal errors, not network failures.
    The client raises some of its failures as a plain ``RuntimeError`` raised from the
    connection's error, or from a ``ValueError`` of a malformed answer ("Error while
    uploading ..."): the chain decides, and only a programming error at its root is a bug."""
    chain = list(causes(exc))
    return any(map(_of_the_hub, chain)) or not isinstance(chain[-1], _BUGS)


# Errors of code, not of a remote: a call that no longer fits the library, a missing name
_BUGS = (TypeError, AttributeError, NameError, ImportError, AssertionError, NotImplementedError)


def _of_the_hub(exc: BaseException) -> bool:
    module = type(exc).__module__
    return isinstance(exc, OSError) or module.startswith(("huggingface_hub", "httpx"))


def describe(exc: BaseException) -> str:
    """What went wrong with a call to the Hub, in one line and without a pre-signed URL."""
    status = next((status_of(c) for c in causes(exc) if status_of(c)), 0)
    if status == 429:
        asked = retry_after(exc)
        wait = f" and asked to wait {asked:g} s" if asked is not None else ""
        return f"the Hub rate limited the requests (HTTP 429){wait}"
    if status:
        response = next(c.response for c in causes(exc) if status_of(c))  # type: ignore[attr-defined]
        return f"HTTP {status} {getattr(response, 'reason_phrase', '')}".strip()
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for cause in causes(exc):  # a connection's error says most, not the client's wrapper
        if type(cause).__module__.startswith("httpx"):
            said = str(cause).strip().splitlines()[0] if str(cause).strip() else "no answer"
            text = f"{type(cause).__name__}: {said}"
            break
    return _QUERY.sub(r"\1", text)


def retried_note(exc: BaseException) -> str:
    """`` (tried again N times)``, or how long the Hub asked to wait beyond what is waited."""
    asked = retry_after(exc)
    if asked is not None and asked > network.MAX_RETRY_AFTER_S:
        return f", more than the {network.MAX_RETRY_AFTER_S:g} s the builder waits"
    tries = network.retries() if transient(exc) else 0
    return f" (tried again {tries} time{'s' if tries > 1 else ''})" if tries else ""


# ------------------------------------------------------------------ the retries


def retrying_here(action: Any) -> Any:
    """``action()`` tried again here (``network.retrying``, the pause the Hub asks for
    honoured: ``retry_after``), the client's own retries of its requests off meanwhile."""
    OUTER[0] += 1
    try:
        return network.retrying(action, transient, asked=retry_after)
    finally:
        OUTER[0] -= 1


# ------------------------------------------------------------------ the download


def download_release(spec: str, folders: tuple[str, ...]) -> Path:
    """The manifest and the files of ``folders`` of release ``spec``, in the Hub's cache."""
    match = HUB_RELEASE.match(spec)
    if match is None:
        raise ValueError(f"{spec}: not org/name@revision")
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import RevisionNotFoundError
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars

    repo, revision = match["repo"], match["revision"]
    storage = Path(constants.HF_HUB_CACHE) / f"datasets--{repo.replace('/', '--')}"
    existed = storage.exists()
    patterns = [MANIFEST, *(f"{name}/*" for name in folders)]

    def fetch(rev: str) -> Path:
        return Path(
            snapshot_download(repo, repo_type="dataset", revision=rev, allow_patterns=patterns)
        )

    def either() -> Path:
        try:
            return fetch(revision)
        except RevisionNotFoundError:
            # ``publish --version 1.3.0`` tags ``v1.3.0``: a bare version names that tag
            if not _BARE_VERSION.match(revision):
                raise
        # outside the handler: a failure of this one (a 503, a hang) is not told as the
        # first one's "no such revision", which would be its context
        return fetch(f"v{revision}")

    shown = sys.stderr.isatty() or are_progress_bars_disabled()  # else kept out of logs
    try:
        with hub_client(), contextlib.nullcontext() if shown else disable_progress_bars():
            return _interruptible(lambda: retrying_here(either))
    except BaseException as exc:
        if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM: what arrived is dropped
            _clear_partial(storage, existed)
            raise
        _clear_partial(storage, existed)
        said = _said(spec, repo, revision, storage, exc)
        if said is exc:
            raise
        raise said from exc


def _interruptible(download: Callable[[], Path]) -> Path:
    """``download()`` on a thread of its own, waited for here. The client fetches files on
    a pool of threads and waits for the pool: a file arriving slowly (a byte a second
    never times out) held Ctrl-C and SIGTERM until it was whole. Waited for here, the
    signal stops the command at once; the pool is left to the process's end, which an
    interrupted command does not wait for (``builder.cli.leave``)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="download")
    try:
        future = pool.submit(download)
        # in short waits: a signal the system hands to another thread of the process wakes
        # no wait of this one, and Python runs its handler only when this thread runs
        while not future.done():
            wait([future], timeout=0.1)
        return future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _clear_partial(storage: Path, existed: bool) -> None:
    """What a failed download left in the cache: all of it when it made the folder, else
    its partial files."""
    if not existed:
        shutil.rmtree(storage, ignore_errors=True)
        shutil.rmtree(storage.parent / ".locks" / storage.name, ignore_errors=True)
        with contextlib.suppress(OSError):  # made for it, if nothing else is locked there
            (storage.parent / ".locks").rmdir()
        return
    for partial in storage.glob("blobs/*.incomplete"):
        partial.unlink(missing_ok=True)


def _said(spec: str, repo: str, revision: str, storage: Path, exc: Exception) -> Exception:
    """``exc`` as the one error the command says."""
    from huggingface_hub import get_token
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    endpoint = _endpoint()
    token = bool(get_token())
    chain = list(causes(exc))
    if any(is_disk_full(c) for c in chain):
        cache = storage.parent
        error = CacheFull(f"{spec}: no space left on the device writing {cache}")
        error.hint = (
            f"free space there (the download needs the release's size; `hf cache rm "
            f"dataset/{repo}` clears what is cached of it) or set HF_HOME to a folder on "
            "a larger disk, and run it again"
        )
        return error
    status = next((status_of(c) for c in chain if status_of(c)), 0)
    message = next(
        (str(c.response.headers.get("X-Error-Message", "")) for c in chain if status_of(c)), ""
    )
    if status == 401 and (message.startswith("Invalid credentials") or not token):
        if token:
            return HubToken(
                f"{spec}: the Hub at {endpoint} rejected the token (HTTP 401): it is invalid, "
                "expired or revoked"
            )
        error = HubToken(f"{spec}: the Hub at {endpoint} asks for a token (HTTP 401)")
        error.hint = "set HF_TOKEN or log in with `hf auth login`, then run it again"
        return error
    if status == 403:
        error = HubToken(f"{spec}: the token may not read {repo} (HTTP 403)")
        error.hint = "use a token of an account that may read it"
        return error
    if any(isinstance(c, RevisionNotFoundError) for c in chain):
        shown = f"{revision} (nor v{revision})" if _BARE_VERSION.match(revision) else revision
        missing = ReleaseUnreadable(f"{repo} has no tag or revision {shown}{_tags(repo)}")
        missing.hint = "name one of its releases"
        return missing
    if any(isinstance(c, RepositoryNotFoundError) for c in chain):
        private = (
            " (or it is private: set HF_TOKEN)" if not token else " (or the token cannot see it)"
        )
        missing = ReleaseUnreadable(f"no dataset repository {repo} at {endpoint}{private}")
        missing.hint = "check the repository's name and HF_ENDPOINT"
        return missing
    if not transient(exc) and not status and not from_the_hub(exc):
        return exc  # raised as it is: an internal error
    if transient(exc) or not status:
        error = HubUnreachable(
            f"{spec}: cannot download the release from {endpoint}: {describe(exc)}"
            f"{retried_note(exc)}; nothing was kept of it"
        )
        asked = retry_after(exc)
        if status == 429 and asked is not None:
            error.hint = f"wait {asked:g} s, then run the same command again"
        return error
    return ReleaseUnreadable(describe(exc))


def _tags(repo: str) -> str:
    """`` (its releases: v1.0.0, v1.1.0)`` when the Hub says so at once, else empty."""
    try:
        from huggingface_hub import HfApi

        with hub_client():
            OUTER[0] += 1
            try:
                refs = HfApi().list_repo_refs(repo, repo_type="dataset")
            finally:
                OUTER[0] -= 1
    except Exception:
        return ""
    names = sorted(t.name for t in refs.tags)
    return f" (its tags: {', '.join(names)})" if names else " (it has no tags)"


def _endpoint() -> str:
    from huggingface_hub import constants

    return str(constants.ENDPOINT)
