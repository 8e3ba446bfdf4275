"""Where inputs are read and outputs written: local paths or object-store URIs.

A URI (``s3://bucket/key``, ``gs://…``, ``hdfs://…``, ``file:///…``) goes through
``pyarrow.fs``, which takes its credentials and endpoint the usual way (``AWS_*`` variables or
``~/.aws``, ``AWS_ENDPOINT_URL`` for S3-compatible stores, Google application credentials).
Anything without a ``scheme://`` is a local path, read with the standard library.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, TypeVar

from builder.errors import EnvironmentProblem, UsageError
from builder.fs import network
from builder.fs.uris import is_uri
from schemas.manifest import MANIFEST, read_manifest

# ``pyarrow.fs`` is imported where an object store is used, not here: a local path goes
# through this module too, and the command line decides which before its own imports.
if TYPE_CHECKING:
    import pyarrow.fs as pafs

_BUCKET_SCHEMES = ("s3", "gs", "gcs")
T = TypeVar("T")


class StorageError(EnvironmentProblem, OSError):
    """An object store that cannot be reached, or that failed a request: run again."""

    hint = "check the store's endpoint and credentials (AWS_ENDPOINT_URL, …) and run it again"


class UnknownStorage(UsageError, ValueError):
    """A URI that names no store ``pyarrow.fs`` serves (``ftp://…``, a typo in the scheme)."""

    hint = "use s3://, gs://, hdfs:// or file://, or a local path"


class Stat(NamedTuple):
    """What identifies a file's version without reading it. Object stores have no inode or
    ctime: objects are replaced whole, so their size and mtime stand for both."""

    st_dev: int
    st_ino: int
    st_size: int
    st_mtime_ns: int
    st_ctime_ns: int


@functools.cache
def _filesystem(root: str) -> pafs.FileSystem:
    import pyarrow.fs as pafs

    return _call(root, "open this storage", lambda: _tuned(pafs.FileSystem.from_uri(root)[0]))


def _tuned(fs: pafs.FileSystem) -> pafs.FileSystem:
    """An S3 filesystem with the build's timeout on connecting and on each request, and its
    bounded retries (the SDK's own backoff), instead of the SDK's defaults; the endpoint,
    region and credentials stay as the URI and the environment set them."""
    import pyarrow.fs as pafs

    if not isinstance(fs, pafs.S3FileSystem):
        return fs
    _, (options,) = fs.__reduce__()
    seconds = network.timeout()
    options |= {
        "connect_timeout": seconds,
        "request_timeout": seconds,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=network.retries() + 1),
    }
    return pafs.S3FileSystem(**options)


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of ``uri`` and the path in it. Bucket stores keep one filesystem per
    bucket (opening one may cost a request, e.g. to find an S3 bucket's region)."""
    import pyarrow.fs as pafs

    scheme, _, rest = uri.partition("://")
    if scheme in _BUCKET_SCHEMES:
        return _filesystem(f"{scheme}://{rest.split('/', 1)[0]}"), rest
    fs, path = _call(uri, "open this storage", lambda: pafs.FileSystem.from_uri(uri))
    return _tuned(fs), path


def _call(uri: str, what: str, action: Callable[[], T]) -> T:
    """``action()``, with a failure of the store turned into an error that names the URI: a
    URI no store serves is the user's to fix; anything else (no connection, a refused or
    failed request) is the environment's, and running again may succeed."""
    import pyarrow as pa

    try:
        return action()
    except (FileNotFoundError, StorageError, UnknownStorage):
        raise
    except ValueError as exc:  # pyarrow's ArrowInvalid: a URI it cannot parse or serve
        raise UnknownStorage(f"{uri}: cannot {what}: {exc}") from exc
    except (pa.ArrowException, OSError) as exc:
        raise StorageError(f"{uri}: cannot {what}: {exc}") from exc


def open_input(path: str) -> BinaryIO:
    if not is_uri(path):
        return open(path, "rb")
    fs, inner = resolve(path)
    return _call(path, "open", lambda: fs.open_input_stream(inner))  # type: ignore[return-value]


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's stored bytes (a local path or an object-store URI)."""
    digest = hashlib.sha256()
    with open_input(str(path)) as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def stat(path: str) -> Stat:
    if not is_uri(path):
        st = os.stat(path)
        return Stat(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    import pyarrow.fs as pafs

    fs, inner = resolve(path)
    if isinstance(fs, pafs.LocalFileSystem):  # file://: the inode and ctime a cache needs, too
        return stat(inner)
    info = _call(path, "stat", lambda: fs.get_file_info(inner))
    if info.type != pafs.FileType.File:
        raise FileNotFoundError(f"{path}: no such object")
    mtime = info.mtime_ns or 0
    return Stat(0, 0, info.size or 0, mtime, mtime)


def is_file(path: str) -> bool:
    if not is_uri(path):
        return Path(path).is_file()
    try:
        stat(path)
    except FileNotFoundError:
        return False
    return True


def glob(pattern: str) -> list[str]:
    """Sorted URIs matching ``pattern``: ``*`` and ``?`` within one path segment, ``**/``
    across any number of them (as ``glob.glob(..., recursive=True)``)."""
    import pyarrow.fs as pafs

    scheme, _, rest = pattern.partition("://")
    segments = rest.split("/")
    fixed = next(i for i, s in enumerate(segments) if re.search(r"[*?\[]", s))
    base = "/".join(segments[:fixed])
    fs, inner_base = resolve(f"{scheme}://{base}")
    selector = pafs.FileSelector(inner_base, recursive=True, allow_not_found=True)
    infos = _call(pattern, "list", lambda: fs.get_file_info(selector))
    regex = re.compile(_translate("/".join(segments[fixed:])))
    prefix = inner_base.rstrip("/") + "/"
    found = [
        f"{scheme}://{base}/{info.path[len(prefix) :]}"
        for info in infos
        if info.type == pafs.FileType.File and regex.fullmatch(info.path[len(prefix) :])
    ]
    return sorted(found)


def _translate(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)  # a leading "]" is part of the class, as in glob
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            out.append("[" + ("^" if negate else "") + re.escape(body[negate:]) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def upload(folder: Path, uri: str) -> dict[str, int]:
    """Copy ``folder`` to ``uri``, ``manifest.json`` last (a reader that starts from the
    manifest never sees it before the files it lists), then delete the data files the
    previous build there listed and this one does not have. Data files an upload cut off
    before had sent are not sent again (``_arrived``). Nothing else under ``uri`` is
    touched, so a mistaken prefix loses no one else's objects. A data file the previous
    manifest lists with the same sha256, and that is there with the same size, is not sent
    again (an appended input changes only its own segment's files). Returns the number of
    files ``sent``, ``unchanged`` and ``deleted``."""
    import pyarrow.fs as pafs

    fs, inner = resolve(uri)
    inner = inner.rstrip("/")
    previous = _call(uri, "read", lambda: _listed_files(fs, f"{inner}/{MANIFEST}"))
    current = read_manifest(folder).get("files", {})
    same = sorted(rel for rel, digest in current.items() if previous.get(rel) == digest)
    there = _call(uri, "read", lambda: fs.get_file_info([f"{inner}/{rel}" for rel in same]))
    unchanged = {
        rel
        for rel, info in zip(same, there, strict=True)
        if info.type == pafs.FileType.File and info.size == (folder / rel).stat().st_size
    }
    unchanged |= _arrived(fs, inner, folder, current, set(same))
    local = pafs.LocalFileSystem()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    # The data files first, then the card and its images, the manifest last: an upload cut
    # off half-way leaves the previous card beside the previous manifest for longest.
    files.sort(key=lambda p: (p.name == MANIFEST, p.relative_to(folder).as_posix() not in current))
    sent = 0
    for path in files:
        rel = path.relative_to(folder).as_posix()
        if rel in unchanged:
            continue
        target = f"{inner}/{rel}"
        if isinstance(fs, pafs.LocalFileSystem):  # a file:// target has real folders
            fs.create_dir(target.rpartition("/")[0], recursive=True)
        _call(uri, "upload", lambda p=path, t=target: _copy(p, t, local, fs))
        sent += 1
    names = {p.relative_to(folder).as_posix() for p in files}
    stale = sorted(set(previous) - names)
    for rel in stale:
        _call(uri, "delete", lambda r=rel: fs.delete_file(f"{inner}/{r}"))
    return {"sent": sent, "unchanged": len(unchanged), "deleted": len(stale)}


def _arrived(
    fs: pafs.FileSystem, inner: str, folder: Path, current: dict[str, str], known: set[str]
) -> set[str]:
    """Data files an interrupted upload of this build already sent: their names carry the
    start of their sha256 (``builder.fs.parquet``), so one there with the same name and size
    is this file, and a rerun does not send it twice."""
    import pyarrow.fs as pafs

    named = sorted(
        rel
        for rel, digest in current.items()
        if rel not in known and isinstance(digest, str) and digest[:16] in rel.rsplit("/", 1)[-1]
    )
    if not named:
        return set()
    there = _call(inner, "read", lambda: fs.get_file_info([f"{inner}/{rel}" for rel in named]))
    return {
        rel
        for rel, info in zip(named, there, strict=True)
        if info.type == pafs.FileType.File and info.size == (folder / rel).stat().st_size
    }


def _copy(path: Path, target: str, local: pafs.FileSystem, fs: pafs.FileSystem) -> None:
    """Copy one file, closing the remote stream here: a close that fails raises (an object
    store sends the last part on close). ``pafs.copy_files`` leaves a failed close to the
    stream's destructor, which prints the error to stderr and carries on as if it had been
    sent."""
    with local.open_input_stream(str(path)) as source:
        sink = fs.open_output_stream(target)
        try:
            while chunk := source.read(1 << 23):
                sink.write(chunk)
        finally:
            sink.close()


def _listed_files(fs: pafs.FileSystem, manifest: str) -> dict[str, str]:
    """The data files a manifest already in the store lists, with their sha256 (none when
    there is none)."""
    try:
        with fs.open_input_stream(manifest) as stream:
            listed = json.loads(stream.read()).get("files", {})
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(listed, dict):
        return {}
    return {name: str(d) for name, d in listed.items() if ".." not in name.split("/")}
