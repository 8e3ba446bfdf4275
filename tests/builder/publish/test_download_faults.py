"""A release read back (``export-jsonl``, ``build --from``) from a Hub that fails: each
fault ends in one line with the documented exit code, after the retries the builder's
settings ask for, and leaves no partial file in the Hub's cache or beside the output.

Faults are injected into the local Hub (``tests.hub_server``); retries and timeouts are
kept short with ``EPISODES_RETRIES`` and ``EPISODES_TIMEOUT``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builder import errors as exit_codes
from builder.cli.episodes import main
from builder.fs import network
from builder.pipeline import BuildReport
from tests.builder.publish.helpers import run_publish
from tests.hub_server import HubServer, rate_limit

REPO = "org/download-faults"
RELEASE = f"{REPO}@v1.0.0"
OBJECTS = r"^/objects/"  # the LFS objects (the tables' Parquet files), on the storage listener
MANIFEST = r"/resolve/[^/]+/manifest\.json$"
REVISION = rf"^/api/datasets/{REPO}/revision/"


@pytest.fixture(scope="module")
def release(hub: HubServer, build_a: BuildReport, tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.builder.publish.conftest import WRITE_TOKEN

    mp = pytest.MonkeyPatch()
    mp.setenv("HF_TOKEN", WRITE_TOKEN)
    folder = tmp_path_factory.mktemp("download-faults") / "dataset"
    shutil.copytree(build_a.out, folder)
    code, _, err = run_publish(folder, "--repo", REPO, "--version", "1.0.0", "--no-progress")
    mp.undo()
    assert code == 0, err
    return RELEASE


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hub cache for the test (each download starts from nothing), one retry after
    half a second, and a timeout of 2 s."""
    from huggingface_hub import constants

    folder = tmp_path / "hub-cache"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(folder))
    monkeypatch.setenv(network.RETRIES_ENV, "1")
    monkeypatch.setenv(network.TIMEOUT_ENV, "2")
    return folder


def export(spec: str, out: Path, capfd: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["export-jsonl", spec, "--out", str(out)])
    err = capfd.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return code, err.strip().splitlines()


def partial_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".incomplete")]


@pytest.mark.parametrize("path", [OBJECTS, MANIFEST], ids=["parquet", "manifest"])
def test_a_download_cut_short_every_time_is_one_line_and_exit_5(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, path: str, capfd
) -> None:
    hub.fail("GET", path, "truncate", times=100)
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and "tried again 1 time" in err[0] and "run " in err[0], err
    assert "sig=" not in err[0]
    assert partial_files(cache) == [] and not (tmp_path / "x.jsonl").exists()


def test_a_download_cut_short_once_is_tried_again(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, capfd
) -> None:
    hub.fail("GET", OBJECTS, "truncate")
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == 0, err
    assert (tmp_path / "x.jsonl").stat().st_size > 0


def test_a_hub_dying_during_build_from_is_one_line_and_exit_5(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, capfd
) -> None:
    hub.fail("GET", OBJECTS, "die")
    try:
        code = main(
            [
                *("build", "--from", release, "--out", str(tmp_path / "rf" / "ds")),
                *("--rejects", str(tmp_path / "rf" / "r.jsonl"), "--no-progress", "--timeout", "2"),
            ]
        )
    finally:
        hub.revive()
        hub.clear()
    err = capfd.readouterr().err.strip().splitlines()
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and err[0].startswith("episodes build: "), err
    assert "cannot download the release" in err[0] and "Trying to resume" not in err[0]
    assert partial_files(cache) == [] and not (tmp_path / "rf").exists()


def test_a_hub_that_does_not_answer_times_out(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, monkeypatch, capfd
) -> None:
    monkeypatch.setenv(network.TIMEOUT_ENV, "0.5")
    monkeypatch.setenv(network.RETRIES_ENV, "0")
    hub.fail("GET", REVISION, "delay", seconds=3)
    started = time.monotonic()
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and "Timeout" in err[0], err
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("status", [503, 500])
def test_a_failing_hub_is_tried_again_then_exit_5(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, status: int, capfd
) -> None:
    fault = hub.fail("GET", REVISION, "status", times=100, status=status)
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert fault.hits == 2  # the first try and one more (EPISODES_RETRIES=1)
    assert len(err) == 1 and str(status) in err[0] and "check the network" in err[0], err
    assert "check the repository" not in err[0]


def test_a_hub_out_of_reach_is_exit_5(
    release: str, cache: Path, tmp_path: Path, monkeypatch, capfd
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    code, err = export(release, tmp_path / "x.jsonl", capfd)
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and "ConnectError" in err[0] and "HF_ENDPOINT" in err[0], err


@pytest.mark.parametrize(
    ("asked", "wait"),
    [({"seconds": 1}, 1.0), ({"headers": rate_limit(2)}, 2.0)],
    ids=["retry-after", "ratelimit"],
)
def test_a_429_waits_as_the_hub_says(
    hub: HubServer,
    release: str,
    cache: Path,
    tmp_path: Path,
    capfd,
    asked: dict,
    wait: float,
) -> None:
    """A ``Retry-After`` or a ``RateLimit`` header: the pause the Hub asks for is taken."""
    hub.fail("GET", REVISION, "status", status=429, **asked)
    started = time.monotonic()
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == 0, err
    assert time.monotonic() - started >= wait  # not the 0.5 s of the first backoff


def test_a_429_asking_too_long_a_wait_is_said(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, capfd
) -> None:
    fault = hub.fail("GET", REVISION, "status", times=100, status=429, seconds=3600)
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert fault.hits == 1 and len(err) == 1, err
    assert "rate limited" in err[0] and "3600 s" in err[0] and "wait 3600 s" in err[0]


def test_a_ratelimit_asking_too_long_a_wait_is_said_at_once(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, capfd
) -> None:
    fault = hub.fail("GET", REVISION, "status", times=100, status=429, headers=rate_limit(300))
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert fault.hits == 1 and len(err) == 1, err
    assert "rate limited" in err[0] and "asked to wait 300 s" in err[0], err
    assert "more than the 60 s" in err[0] and "wait 300 s, then run" in err[0], err


def test_a_file_rate_limited_too_long_is_not_waited_by_the_client(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, monkeypatch, capfd
) -> None:
    """The Hub client's own retries (a file's download) give up a long pause at once too."""
    monkeypatch.setattr(network, "MAX_RETRY_AFTER_S", 1.0)
    fault = hub.fail("GET", MANIFEST, "status", times=100, status=429, headers=rate_limit(3))
    started = time.monotonic()
    try:
        code, err = export(release, tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert fault.hits == 1 and time.monotonic() - started < 3, err  # not 3 + 1 s asleep
    assert len(err) == 1 and "asked to wait 3 s" in err[0], err


def test_private_hub_client_functions_renamed_are_left_alone(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, monkeypatch, capfd
) -> None:
    """A later Hub client whose retry functions take other parameters keeps its own retries
    (nothing replaced) instead of failing every call with a ``TypeError``."""
    import huggingface_hub.file_download as download
    import huggingface_hub.utils._http as http

    from builder.fs.releases import hub_client

    backoff, get = http._http_backoff_base, download.http_get
    with hub_client():  # today's client: both replaced
        assert http._http_backoff_base is not backoff and download.http_get is not get

    def renamed_backoff(method, url, *, retries=5, wait=1.0, most=8.0, **kwargs):
        return backoff(method, url, **kwargs)

    def renamed_get(
        url, temp_file, *, resume_size=0, headers=None, expected_size=None,
        displayed_filename=None, tqdm_class=None, retries=5, _tqdm_bar=None,
    ):  # fmt: skip
        return get(
            url, temp_file, resume_size=resume_size, headers=headers,
            expected_size=expected_size, displayed_filename=displayed_filename,
            tqdm_class=tqdm_class, _nb_retries=retries, _tqdm_bar=_tqdm_bar,
        )  # fmt: skip

    monkeypatch.setattr(http, "_http_backoff_base", renamed_backoff)
    monkeypatch.setattr(download, "http_get", renamed_get)
    with hub_client():
        assert http._http_backoff_base is renamed_backoff and download.http_get is renamed_get
    monkeypatch.setattr(http, "_http_backoff_base", backoff)
    code, err = export(release, tmp_path / "x.jsonl", capfd)  # each file through renamed_get
    assert code == 0, err


def test_an_unexpected_error_of_the_hub_client_is_an_internal_error(
    release: str, cache: Path, tmp_path: Path, monkeypatch, capfd
) -> None:
    """A bug (the client's or in its use) is not said to be the network's (exit 5)."""
    import huggingface_hub

    def broken(*args, **kwargs):
        raise TypeError("snapshot_download() got an unexpected keyword argument 'x'")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", broken)
    code = main(["export-jsonl", release, "--out", str(tmp_path / "x.jsonl")])
    err = capfd.readouterr().err.strip().splitlines()
    assert code == exit_codes.INTERNAL, err
    assert len(err) == 1 and "internal error: TypeError" in err[0], err
    assert "check the network" not in err[0]


def test_a_rejected_token_is_said(
    release: str, cache: Path, tmp_path: Path, monkeypatch, capfd
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_token_at_all")
    code, err = export(release, tmp_path / "x.jsonl", capfd)
    assert code == exit_codes.REFUSED, err
    assert len(err) == 1 and "rejected the token" in err[0] and "HF_TOKEN" in err[0], err


def test_a_missing_repository_and_a_missing_tag_are_told_apart(
    release: str, cache: Path, tmp_path: Path, capfd
) -> None:
    code, err = export("org/no-such-repo@v1.0.0", tmp_path / "x.jsonl", capfd)
    assert code == exit_codes.USAGE and len(err) == 1, err
    assert "no dataset repository org/no-such-repo" in err[0], err
    code, err = export(f"{REPO}@v9.9.9", tmp_path / "x.jsonl", capfd)
    assert code == exit_codes.USAGE and len(err) == 1, err
    assert f"{REPO} has no tag or revision v9.9.9" in err[0] and "v1.0.0" in err[0], err


def test_a_full_disk_under_the_cache_names_it_and_leaves_nothing(
    release: str, tmp_path: Path, monkeypatch, capfd
) -> None:
    from huggingface_hub import constants

    from tests.small_disk import fill, small_disk

    monkeypatch.setenv(network.RETRIES_ENV, "1")
    with small_disk(tmp_path / "disk", 4) as disk:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(disk / "hub"))
        fill(disk, 40_000)
        code, err = export(release, tmp_path / "x.jsonl", capfd)
        left = sorted(p.relative_to(disk).as_posix() for p in disk.rglob("*") if p.is_file())
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and f"no space left on the device writing {disk / 'hub'}" in err[0]
    assert f"hf cache rm dataset/{REPO}" in err[0] and "HF_HOME" in err[0], err
    assert left == ["filler", "hub/CACHEDIR.TAG"]  # the cache's partial download is gone


def test_a_full_disk_under_the_output_names_it_and_removes_what_it_made(
    release: str, cache: Path, tmp_path: Path, capfd
) -> None:
    from tests.small_disk import fill, small_disk

    with small_disk(tmp_path / "disk", 4) as disk:
        fill(disk, 60_000)
        out = disk / "rf" / "ds"
        code = main(
            [
                *("build", "--from", release, "--out", str(out)),
                *("--rejects", str(disk / "rf" / "r.jsonl"), "--no-progress"),
            ]
        )
        left = sorted(p.name for p in disk.iterdir())
    err = capfd.readouterr().err.strip().splitlines()
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and f"no space left on the device writing {disk}/rf/" in err[0], err
    assert left == ["filler"]  # no empty rf/ left behind


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_a_download_that_arrives_a_byte_at_a_time(
    hub: HubServer, release: str, tmp_path: Path, sent: signal.Signals, code: int
) -> None:
    """A manifest sent a byte a second never stalls for the timeout: the client's pool of
    download threads, joined as the signal's exception left it, held the command until the
    file was whole (minutes; for ever at a byte an hour). It stops at once: its exit code,
    one line, no partial file in the Hub's cache."""
    cache = tmp_path / "hub-cache"
    env = {**os.environ, "HF_HUB_CACHE": str(cache), network.TIMEOUT_ENV: "5"}
    hub.fail("GET", MANIFEST, "trickle", times=100, seconds=1)
    try:
        command = [str(Path(sys.executable).parent / "episodes"), "export-jsonl", release]
        process = subprocess.Popen(
            [*command, "--out", str(tmp_path / "x.jsonl")],
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not partial_files(cache) and time.monotonic() < deadline:
            time.sleep(0.1)  # until the manifest is arriving
        assert partial_files(cache)
        process.send_signal(sent)
        started = time.monotonic()
        _, err = process.communicate(timeout=30)
        stopped = time.monotonic() - started
    finally:
        hub.clear()
    assert process.returncode == code, err
    assert stopped < 5, stopped
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert partial_files(cache) == [] and not (tmp_path / "x.jsonl").exists()


def test_a_fault_behind_a_bare_version_is_the_hub_s_not_a_missing_tag(
    hub: HubServer, release: str, cache: Path, tmp_path: Path, capfd
) -> None:
    """``@1.0.0`` names the tag ``v1.0.0`` once no revision ``1.0.0`` exists: a server
    failing on that second lookup is said as such (exit 5), where the first lookup's "no
    such revision" was told instead (exit 1, "name one of its releases", which it named)."""
    hub.fail("GET", rf"{REVISION}v1\.0\.0", "status", times=100, status=503)
    try:
        code, err = export(release.replace("@v", "@"), tmp_path / "x.jsonl", capfd)
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and "503" in err[0] and "no tag" not in err[0], err
    assert partial_files(cache) == [] and not (tmp_path / "x.jsonl").exists()
