"""One timeout and one retry budget for every network call, read from the environment."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from builder.fs import network, storage


def test_a_transient_failure_is_tried_again_after_growing_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(network.RETRIES_ENV, "3")
    calls, pauses = [], []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError("reset")
        return "done"

    assert network.retrying(flaky, lambda e: isinstance(e, OSError), pauses.append) == "done"
    assert len(calls) == 3 and pauses == [0.5, 1.0]


def test_retries_are_bounded_and_only_for_what_may_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(network.RETRIES_ENV, "2")
    calls: list[int] = []

    def down() -> None:
        calls.append(1)
        raise ConnectionRefusedError(f"refused {len(calls)}")

    with pytest.raises(ConnectionRefusedError, match="refused 3"):
        network.retrying(down, lambda e: isinstance(e, OSError), lambda s: None)
    calls.clear()
    with pytest.raises(ConnectionRefusedError, match="refused 1"):
        network.retrying(down, lambda e: False, lambda s: None)
    assert network.backoff(10) == network.MAX_BACKOFF_S


def test_the_settings_come_from_the_environment_and_are_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(network.TIMEOUT_ENV, "")  # unset, and put back after set_timeout
    assert network.timeout() == network.DEFAULT_TIMEOUT_S and network.timeout(10) == 10
    network.set_timeout(2.5)
    assert network.timeout() == 2.5
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv(network.TIMEOUT_ENV, bad)
        with pytest.raises(network.BadSetting, match=network.TIMEOUT_ENV):
            network.timeout()
    monkeypatch.setenv(network.RETRIES_ENV, "-1")
    with pytest.raises(network.BadSetting, match=network.RETRIES_ENV):
        network.retries()
    for seconds in (0, float("nan"), float("inf")):  # an infinite one is no bound at all
        with pytest.raises(network.BadSetting, match=f"--timeout {seconds:g}"):
            network.set_timeout(seconds)


def test_an_s3_store_gets_the_timeout_and_the_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(network.TIMEOUT_ENV, "7")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    storage._filesystem.cache_clear()
    fs, path = storage.resolve("s3://bucket/key")
    storage._filesystem.cache_clear()
    _, (options,) = fs.__reduce__()
    assert isinstance(fs, pafs.S3FileSystem) and path == "bucket/key"
    assert options["connect_timeout"] == options["request_timeout"] == 7
    assert options["endpoint_override"] == "http://127.0.0.1:9"  # as the environment set it
