"""A publish against a Hub that fails, rate limits or answers late: stderr holds the
builder's own line (none of the Hub client's retry notices or pre-signed URLs), the client
retries as ``EPISODES_RETRIES`` says, a ``Retry-After`` is waited, a commit that timed out
is said to be maybe committed, and a publish killed outright leaves nothing the next
command or ``episodes doctor`` does not remove."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from builder import errors as exit_codes
from builder.cli.episodes import main
from builder.fs import leftovers, network
from builder.pipeline import BuildReport
from tests.builder.publish.helpers import run_publish
from tests.hub_server import HubServer, rate_limit

COMMIT = r"^/api/datasets/org/[^/]+/commit/main$"


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(network.RETRIES_ENV, "1")
    monkeypatch.setenv(network.TIMEOUT_ENV, "5")


def publish(build: Path, repo_id: str, version: str, *extra: str) -> int:
    return main(["publish", str(build), "--repo", repo_id, "--version", version, *extra])


def test_a_hub_dying_mid_upload_is_one_line_of_the_builders_own(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str, quick: None, capfd
) -> None:
    hub.fail("PUT", r"^/upload/", "die")
    started = time.monotonic()
    try:
        code = publish(build_a.out, repo_id, "1.0.0", "--no-progress")
    finally:
        hub.revive()
    err = capfd.readouterr().err.strip().splitlines()
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err) == 1 and err[0].startswith("episodes publish: "), err
    assert "Retry" not in err[0] and "sig=" not in err[0]
    assert time.monotonic() - started < 8  # one pause of 0.5 s, not the client's 1+2+4+8+8


def test_the_clients_upload_retries_follow_episodes_retries(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str, quick: None, capfd
) -> None:
    hub.fail("PUT", r"^/upload/", "drop", times=100)
    start = len(hub.requests)
    try:
        code = publish(build_a.out, repo_id, "1.0.0", "--no-progress")
        dropped = [r for r in hub.requests[start:] if r.status == 0 and r.method == "PUT"]
    finally:
        hub.clear()
    err = capfd.readouterr().err.strip().splitlines()
    assert code == exit_codes.UNAVAILABLE and len(err) == 1, err
    assert len({r.path for r in dropped}) >= 1
    per_file = max(sum(r.path == d.path for r in dropped) for d in dropped)
    assert per_file == 2  # the first try and EPISODES_RETRIES=1 more, not the client's 5


@pytest.mark.parametrize(
    "asked", [{"seconds": 1}, {"headers": rate_limit(1)}], ids=["retry-after", "ratelimit"]
)
def test_a_429_is_waited_as_the_hub_says_then_said(
    hub: HubServer,
    build_a: BuildReport,
    repo_id: str,
    hf_token: str,
    quick: None,
    asked: dict,
) -> None:
    fault = hub.fail("GET", r"^/api/whoami", "status", times=100, status=429, **asked)
    started = time.monotonic()
    try:
        code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert fault.hits == 2 and time.monotonic() - started >= 1.0  # not after 0.5 s
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "rate limited" in lines[0] and "asked to wait 1 s" in lines[0]
    assert "wait 1 s, then run the same command again" in lines[0], lines


def test_an_upload_rate_limited_for_longer_than_is_waited_fails_at_once_and_says_it(
    hub: HubServer,
    build_a: BuildReport,
    repo_id: str,
    hf_token: str,
    quick: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Hub client's own retries (an upload's) do not sleep a long ``RateLimit`` out in
    silence: beyond ``MAX_RETRY_AFTER_S`` (1 s here) the publish stops and says the wait."""
    monkeypatch.setattr(network, "MAX_RETRY_AFTER_S", 1.0)
    hub.fail("PUT", r"^/upload/", "status", times=100, status=429, headers=rate_limit(3))
    start = len(hub.requests)
    started = time.monotonic()
    try:
        code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
        limited = [r.path for r in hub.requests[start:] if r.status == 429]
    finally:
        hub.clear()
    assert code == exit_codes.UNAVAILABLE, err
    assert limited and len(set(limited)) == len(limited), limited  # each file tried once
    assert time.monotonic() - started < 3, err  # not 3 + 1 s asleep
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "rate limited" in lines[0] and "asked to wait 3 s" in lines[0]
    assert "nothing was committed" in lines[0], lines


def test_an_upload_rate_limited_briefly_is_waited_and_lands(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str, quick: None
) -> None:
    fault = hub.fail("PUT", r"^/upload/", "status", status=429, headers=rate_limit(1))
    try:
        code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    finally:
        hub.clear()
    assert code == 0 and fault.hits == 1, err


def test_a_commit_slower_than_the_timeout_may_still_land_and_a_rerun_is_safe(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str, quick: None
) -> None:
    hub.fail("POST", COMMIT, "delay", seconds=2)
    argv = (build_a.out, "--repo", repo_id, "--version", "1.0.0")
    code, _, err = run_publish(*argv, "--timeout", "1")
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err.strip().splitlines()) == 1 and "nothing was committed" not in err, err
    assert "may still be committed" in err and "again is safe" in err
    time.sleep(2)  # the Hub applies it after all
    code, _, err = run_publish(*argv)
    assert code == 0, err
    repo = hub.repo(repo_id)
    assert repo.tags["v1.0.0"].target == repo.branches["main"]
    assert len(repo.commits) == 2  # the Hub's first commit and the release: none twice


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_the_staged_copy_of_a_killed_publish_is_found_and_removed(
    build_a: BuildReport, tmp_path: Path, capsys
) -> None:
    from builder.publish.release import stage

    build = tmp_path / "dataset"
    build.mkdir()
    staged = stage(build, {})
    try:  # named by its process, so a dead one's copy can be told from a running one's
        assert leftovers.staged_release("dataset").match(staged.name)
        assert staged.name.startswith(f".dataset.release.{os.getpid()}.")
    finally:
        staged.rmdir()
    killed = tmp_path / f".dataset.release.{dead_pid()}.k1ll3d_x"
    (killed / "data").mkdir(parents=True)
    (killed / "data" / "x.parquet").write_bytes(b"x" * 1000)
    running = tmp_path / f".dataset.release.{os.getppid()}.running"
    running.mkdir()
    assert main(["doctor", str(build)]) == 0
    out = capsys.readouterr().out
    assert killed.name in out and not killed.exists(), out
    assert running.exists()  # its owner still runs


def test_publish_removes_what_a_killed_publish_left(
    build_a: BuildReport, repo_id: str, tmp_path: Path, monkeypatch
) -> None:
    import shutil

    build = tmp_path / "dataset"
    shutil.copytree(build_a.out, build)
    killed = tmp_path / f".dataset.release.{dead_pid()}.abcdefgh"
    killed.mkdir()
    monkeypatch.delenv("HF_TOKEN", raising=False)
    code, _, err = run_publish(build, "--repo", repo_id, "--version", "1.0.0", "--dry-run")
    assert code == 0, err
    assert not killed.exists() and killed.name in err


def test_a_bug_in_a_commit_is_an_internal_error_not_the_hubs(
    hub: HubServer,
    build_a: BuildReport,
    repo_id: str,
    hf_token: str,
    quick: None,
    monkeypatch: pytest.MonkeyPatch,
    capfd,
) -> None:
    """An error of the builder's own (or of its use of the client) while committing is not
    said to be the network's (exit 5, 'check the network')."""
    from builder.publish.hub import Hub

    def broken(self, plan, message, description):
        raise TypeError("create_commit() got an unexpected keyword argument 'x'")

    monkeypatch.setattr(Hub, "commit", broken)
    code = publish(build_a.out, repo_id, "1.0.0", "--no-progress")
    err = capfd.readouterr().err.strip().splitlines()
    assert code == exit_codes.INTERNAL, err
    assert len(err) == 1 and "internal error: TypeError" in err[0], err
