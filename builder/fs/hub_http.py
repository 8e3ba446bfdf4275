"""How every call to the Hub is made (``hub_client``): each request waits at most the network
timeout, the Hub client's own retries follow the builder's (``builder.fs.network``), a pause
the Hub asks for (``Retry-After``, or ``RateLimit``'s ``t=``) is waited up to
``MAX_RETRY_AFTER_S`` and a longer one given up at once, and the client says nothing on
stderr.

The client's retries are changed through private functions of ``huggingface_hub``: each is
replaced only while it still takes the parameters set here, else the client's own retries
stand (a later client may rename them; it must not fail every call).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import re
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from builder.fs import network

# ``RateLimit: "api";r=0;t=55``: none of the window's requests left (r), its reset in t s
_RATE_LIMIT = re.compile(r"\"[^\"]*\"\s*;\s*r\s*=\s*(?P<r>\d+)\s*;\s*t\s*=\s*(?P<t>\d+)")

RETRY_PARAMETERS = ("max_retries", "base_wait_time", "max_wait_time")
OUTER = [0]  # > 0 while a call is tried again here: the client then does not retry it too


def asked_wait(status: int, headers: Mapping[str, str]) -> float | None:
    """The seconds an answer asked the client to wait before its next request, as the Hub
    client reads them: a 429's ``RateLimit`` with no request left, else ``Retry-After``."""
    if status == 429:
        match = _RATE_LIMIT.search(str(headers.get("RateLimit", "") or ""))
        if match and int(match["r"]) == 0:
            return float(match["t"])
    value = str(headers.get("Retry-After", "") or "").strip()
    return float(value) if value.isdigit() else None


def _give_up_a_long_wait(response: Any) -> None:
    """A failed answer asking for a longer pause than ``MAX_RETRY_AFTER_S`` is raised at once
    (the client would sleep it, for up to the ``RateLimit`` window, saying nothing)."""
    status = int(response.status_code)
    if status != 429 and status < 500:
        return
    wanted = asked_wait(status, response.headers)
    if wanted is not None and wanted > network.MAX_RETRY_AFTER_S:
        from huggingface_hub.utils import hf_raise_for_status

        hf_raise_for_status(response)


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
    hooks = client.event_hooks
    client.event_hooks = {
        **hooks,
        "request": [*hooks.get("request", []), _bounded],
        "response": [*hooks.get("response", []), _give_up_a_long_wait],
    }
    return client


def _our_retries(base: Any) -> Any:
    @functools.wraps(base)
    def backoff(*args: Any, **kwargs: Any) -> Any:
        kwargs["max_retries"] = 0 if OUTER[0] else network.retries()
        kwargs["base_wait_time"] = network.FIRST_BACKOFF_S
        kwargs["max_wait_time"] = network.MAX_BACKOFF_S
        return base(*args, **kwargs)

    return backoff


def _no_resume_here(get: Any) -> Any:
    @functools.wraps(get)
    def http_get(*args: Any, **kwargs: Any) -> Any:
        if OUTER[0]:  # the download is tried again here, where it resumes its partial file
            kwargs["_nb_retries"] = 0
        return get(*args, **kwargs)

    return http_get


def takes(function: Any, *names: str) -> bool:
    """Whether ``function`` has keyword parameters ``names`` (a ``**kwargs`` does not count:
    it passes them on to where they fail)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return all(n in parameters and parameters[n].kind in keyword for n in names)


@contextlib.contextmanager
def hub_client() -> Iterator[None]:
    """While it lasts, ``huggingface_hub`` waits at most the network timeout for an answer,
    tries a failed request again as often and after the same pauses as the builder does
    (``EPISODES_RETRIES``; a pause the Hub asks for at most ``MAX_RETRY_AFTER_S``), and says
    nothing on stderr: no retry notices, no warnings (the command says what matters in one
    line)."""
    import huggingface_hub.file_download as download
    import huggingface_hub.utils._http as http

    install_client()
    wrapped = (
        (http, "_http_backoff_base", _our_retries, RETRY_PARAMETERS),
        (download, "http_get", _no_resume_here, ("_nb_retries",)),
    )
    changed = []  # (module, name, the library's own, ours)
    for module, name, wrap, needs in wrapped:
        own = getattr(module, name, None)
        if own is not None and takes(own, *needs):
            changed.append((module, name, own, wrap(own)))
    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"huggingface_hub(\.|$)")
            for module, name, _, ours in changed:
                setattr(module, name, ours)
            yield
    finally:
        for module, name, own, _ in reversed(changed):
            setattr(module, name, own)
        logger.setLevel(level)
