"""Point ``huggingface_hub`` and ``datasets`` at a local Hub, whenever they were imported.

Both libraries read ``HF_ENDPOINT`` (and the cache, token and Xet settings) into module
constants at import time, and other test modules of the suite may import them first. So the
environment is set for imports still to come, and the constants of modules already imported
are patched — the same names the libraries read at call time (``constants.ENDPOINT``,
``constants.HUGGINGFACE_CO_URL_TEMPLATE``, ``datasets.config.HF_ENDPOINT``…). ``verify``
checks the result through the libraries' own helpers; ``restore`` undoes everything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

_MISSING = object()


def _env(endpoint: str, home: Path) -> dict[str, str]:
    return {
        "HF_ENDPOINT": endpoint,
        "HF_HUB_DISABLE_XET": "1",  # the local Hub speaks LFS, not Xet
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "HF_ASSETS_CACHE": str(home / "assets"),
        "HF_XET_CACHE": str(home / "xet"),
        "HF_TOKEN_PATH": str(home / "token"),
        "HF_DATASETS_CACHE": str(home / "datasets"),
        "HF_MODULES_CACHE": str(home / "modules"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_OFFLINE": "0",
        "HF_DATASETS_OFFLINE": "0",
    }


def _hub_constants(endpoint: str, home: Path) -> dict[str, Any]:
    host = urlsplit(endpoint).hostname or ""
    return {
        "ENDPOINT": endpoint,
        "HUGGINGFACE_CO_URL_TEMPLATE": endpoint + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_URL_HOSTS": frozenset(
            {*_current("huggingface_hub.constants", "HF_URL_HOSTS", ()), host}
        ),
        "HF_HUB_DISABLE_XET": True,
        "HF_HUB_OFFLINE": False,
        "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_DISABLE_UPDATE_CHECK": True,
        "HF_HUB_DISABLE_PROGRESS_BARS": True,
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "HUGGINGFACE_HUB_CACHE": str(home / "hub"),
        "HF_ASSETS_CACHE": str(home / "assets"),
        "HF_XET_CACHE": str(home / "xet"),
        "HF_TOKEN_PATH": str(home / "token"),
        "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
    }


def _datasets_config(endpoint: str, home: Path) -> dict[str, Any]:
    return {
        "HF_ENDPOINT": endpoint,
        "HUB_DATASETS_URL": endpoint + "/datasets/{repo_id}/resolve/{revision}/{path}",
        "HF_HUB_OFFLINE": False,
        "HF_DATASETS_OFFLINE": False,
        "HF_CACHE_HOME": str(home),
        "HF_DATASETS_CACHE": home / "datasets",
        "HF_MODULES_CACHE": home / "modules",
        "DOWNLOADED_DATASETS_PATH": str(home / "datasets" / "downloads"),
        "EXTRACTED_DATASETS_PATH": str(home / "datasets" / "downloads" / "extracted"),
    }


def _current(module: str, name: str, default: Any) -> Any:
    mod = sys.modules.get(module)
    return getattr(mod, name, default) if mod is not None else default


def point_clients_at(endpoint: str, home: Path) -> Callable[[], None]:
    """Make both libraries use ``endpoint`` and caches/token under ``home``; returns ``restore``."""
    saved_env = {k: os.environ.get(k) for k in _env(endpoint, home)}
    saved_attrs: list[tuple[Any, str, Any]] = []
    os.environ.update(_env(endpoint, home))
    # A token from the developer's machine must never reach the test Hub (or leak in output).
    saved_env.update({k: os.environ.pop(k, None) for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")})

    def patch(module: str, values: dict[str, Any]) -> None:
        mod = sys.modules.get(module)
        if mod is None:
            return  # not imported yet: it will read the environment set above
        for name, value in values.items():
            if hasattr(mod, name):
                saved_attrs.append((mod, name, getattr(mod, name)))
                setattr(mod, name, value)

    patch("huggingface_hub.constants", _hub_constants(endpoint, home))
    patch("datasets.config", _datasets_config(endpoint, home))
    patch("huggingface_hub.utils.tqdm", {"HF_HUB_DISABLE_PROGRESS_BARS": True})
    http = sys.modules.get("huggingface_hub.utils._http")
    if http is not None and hasattr(http, "_HUB_ORIGINS"):
        parts = urlsplit(endpoint)
        origin = (parts.scheme, (parts.hostname or "").lower(), parts.port or 80)
        saved_attrs.append((http, "_HUB_ORIGINS", http._HUB_ORIGINS))
        http._HUB_ORIGINS = frozenset({*http._HUB_ORIGINS, origin})

    def restore() -> None:
        for mod, name, value in reversed(saved_attrs):
            setattr(mod, name, value)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    return restore


def verify(endpoint: str) -> None:
    """Fail loudly if the libraries would not talk to ``endpoint`` (checked after import)."""
    import datasets.config
    from huggingface_hub import HfApi, constants, hf_hub_url
    from huggingface_hub.utils._runtime import is_xet_available

    problems = []
    if HfApi().endpoint != endpoint:
        problems.append(f"HfApi().endpoint is {HfApi().endpoint}")
    url = hf_hub_url("o/n", "f", repo_type="dataset")
    if not url.startswith(endpoint + "/datasets/o/n/resolve/"):
        problems.append(f"hf_hub_url gives {url}")
    if endpoint != datasets.config.HF_ENDPOINT:
        problems.append(f"datasets.config.HF_ENDPOINT is {datasets.config.HF_ENDPOINT}")
    if is_xet_available():
        problems.append("Xet is enabled")
    if constants.is_offline_mode():
        problems.append("offline mode is on")
    if problems:
        raise RuntimeError(
            "the Hub clients are not pointed at the test Hub: " + "; ".join(problems)
        )
