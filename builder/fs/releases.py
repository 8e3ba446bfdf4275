"""A published release, ``org/name@revision`` on the Hub, downloaded in part: what
``--previous`` and ``build --from`` / ``export-jsonl`` read of one; and how every call to the
Hub is made (``hub_client``), publish's too.

A download is tried again as any read of a remote (``builder.fs.network``: the timeout, the
retries, a 429's ``Retry-After``); what it cannot get is one line: the Hub out of reach
(exit 5), a token it refuses (exit 2), a repository or a revision it does not have (exit 1),
a full disk under the Hub's cache (exit 5). A failed download leaves no partial file in the
cache.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import shutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from builder.errors import DataRefused, EnvironmentProblem
from builder.fs import network
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
    """The seconds a 429 or 503 asked the client to wait (``Retry-After``), if it did."""
    for cause in causes(exc):
        response = getattr(cause, "response", None)
        value = getattr(response, "headers", {}).get("Retry-After", "") if response else ""
        if str(value).strip().isdigit():
            return float(value)
    return None


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


# ------------------------------------------------------------------ the client


def _bounded(request: Any) -> None:
    """Every request waits at most the network timeout, whatever the Hub client asked for
    (its default client waits forever; some calls pass ``timeout=None``)."""
    seconds = network.timeout()
    request.extensions = {
        **request.extensions,
        "timeout": dict.fromkeys(("connect", "read", "write", "pool"), seconds),
    }


def install_client() -> None:
    """The Hub client's shared HTTP client, made with the network timeout on every request."""
    import huggingface_hub.utils._http as http
    from huggingface_hub.utils import set_client_factory

    if getattr(http, "_GLOBAL_CLIENT_FACTORY", None) is not _client_factory:
        set_client_factory(_client_factory)


def _client_factory() -> Any:
    from huggingface_hub.utils._http import default_client_factory

    client = default_client_factory()
    client.event_hooks = {
        **client.event_hooks,
        "request": [*client.event_hooks["request"], _bounded],
    }
    return client


_OUTER = [0]  # > 0 while a call is tried again here: the client then does not retry it too


def _our_retries(base: Any) -> Any:
    @functools.wraps(base)
    def backoff(*args: Any, **kwargs: Any) -> Any:
        kwargs["max_retries"] = 0 if _OUTER[0] else network.retries()
        kwargs["base_wait_time"] = network.FIRST_BACKOFF_S
        kwargs["max_wait_time"] = network.MAX_BACKOFF_S
        return base(*args, **kwargs)

    return backoff


def _capped(parse: Any) -> Any:
    @functools.wraps(parse)
    def parsed(*args: Any, **kwargs: Any) -> Any:
        seconds = parse(*args, **kwargs)
        return None if seconds is None else min(seconds, int(network.MAX_RETRY_AFTER_S))

    return parsed


def _no_resume_here(get: Any) -> Any:
    @functools.wraps(get)
    def http_get(*args: Any, **kwargs: Any) -> Any:
        if _OUTER[0]:  # the download is tried again here, where it resumes its partial file
            kwargs["_nb_retries"] = 0
        return get(*args, **kwargs)

    return http_get


@contextlib.contextmanager
def hub_client() -> Iterator[None]:
    """While it lasts, ``huggingface_hub`` waits at most the network timeout for an answer,
    tries a failed request again as often and after the same pauses as the builder does
    (``EPISODES_RETRIES``; a ``Retry-After`` at most ``MAX_RETRY_AFTER_S``), and says
    nothing on stderr: no retry notices, no warnings (the command says what matters in one
    line)."""
    import huggingface_hub.file_download as download
    import huggingface_hub.utils._http as http

    install_client()
    wrapped = (
        (http, "_http_backoff_base", _our_retries),
        (http, "_parse_retry_after", _capped),
        (download, "http_get", _no_resume_here),
    )
    # private names: a later client may not have them (its own retries then stand)
    saved = [
        (module, name, getattr(module, name))
        for module, name, _ in wrapped
        if hasattr(module, name)
    ]
    patched = [
        (module, name, wrap(getattr(module, name)))
        for module, name, wrap in wrapped
        if hasattr(module, name)
    ]
    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"huggingface_hub(\.|$)")
            for module, name, value in patched:
                setattr(module, name, value)
            yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        logger.setLevel(level)


def retrying_here(action: Any) -> Any:
    """``action()`` tried again here (``network.retrying``, ``Retry-After`` honoured), the
    client's own retries of its requests off meanwhile."""
    _OUTER[0] += 1
    try:
        return network.retrying(action, transient, asked=retry_after)
    finally:
        _OUTER[0] -= 1


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
            return fetch(f"v{revision}")

    shown = sys.stderr.isatty() or are_progress_bars_disabled()  # else kept out of logs
    try:
        with hub_client(), contextlib.nullcontext() if shown else disable_progress_bars():
            return retrying_here(either)
    except Exception as exc:
        _clear_partial(storage, existed)
        raise _said(spec, repo, revision, storage, exc) from exc


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
            _OUTER[0] += 1
            try:
                refs = HfApi().list_repo_refs(repo, repo_type="dataset")
            finally:
                _OUTER[0] -= 1
    except Exception:
        return ""
    names = sorted(t.name for t in refs.tags)
    return f" (its tags: {', '.join(names)})" if names else " (it has no tags)"


def _endpoint() -> str:
    from huggingface_hub import constants

    return str(constants.ENDPOINT)
