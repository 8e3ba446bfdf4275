"""A published release, ``org/name@revision`` on the Hub, downloaded in part: what
``--previous`` and ``build --from`` / ``export-jsonl`` read of one."""

from __future__ import annotations

import re
from pathlib import Path

from schemas.manifest import MANIFEST

HUB_RELEASE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<revision>[\w./-]+)$")


class ReleaseUnreadable(Exception):
    """The Hub did not give the release; the message is the first line of its answer."""


def download_release(spec: str, folders: tuple[str, ...]) -> Path:
    """The manifest and the files of ``folders`` of release ``spec``, in the Hub's cache."""
    match = HUB_RELEASE.match(spec)
    if match is None:
        raise ValueError(f"{spec}: not org/name@revision")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return Path(
            snapshot_download(
                match["repo"],
                repo_type="dataset",
                revision=match["revision"],
                allow_patterns=[MANIFEST, *(f"{name}/*" for name in folders)],
            )
        )
    except (HfHubHTTPError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReleaseUnreadable(first) from exc
