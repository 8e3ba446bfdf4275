"""A published release, ``org/name@revision`` on the Hub, downloaded in part: what
``--previous`` and ``build --from`` / ``export-jsonl`` read of one."""

from __future__ import annotations

import re
from pathlib import Path

from schemas.manifest import MANIFEST

HUB_RELEASE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<revision>[\w./-]+)$")
_BARE_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


class ReleaseUnreadable(Exception):
    """The Hub did not give the release; the message is the first line of its answer."""


def download_release(spec: str, folders: tuple[str, ...]) -> Path:
    """The manifest and the files of ``folders`` of release ``spec``, in the Hub's cache."""
    match = HUB_RELEASE.match(spec)
    if match is None:
        raise ValueError(f"{spec}: not org/name@revision")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    def fetch(revision: str) -> Path:
        patterns = [MANIFEST, *(f"{name}/*" for name in folders)]
        return Path(
            snapshot_download(
                match["repo"], repo_type="dataset", revision=revision, allow_patterns=patterns
            )
        )

    revision = match["revision"]
    try:
        try:
            return fetch(revision)
        except HfHubHTTPError as missing:
            # ``publish --version 1.3.0`` tags ``v1.3.0``: a bare version names that tag
            status = getattr(missing.response, "status_code", None)
            if status != 404 or not _BARE_VERSION.match(revision):
                raise
            return fetch(f"v{revision}")
    except (HfHubHTTPError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReleaseUnreadable(first) from exc
