"""A publish the server cuts off half-way leaves the repository as it was; a retry finishes it.

Faults are injected into the local Hub: the connection is dropped while the commit request is
being received (the Hub applies nothing), after the Hub applied the commit but before it
answered, while uploading a file, and while tagging.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builder import errors as exit_codes
from builder.fs import network
from builder.pipeline import BuildReport
from tests.builder.publish.helpers import run_publish, snapshot, writes
from tests.hub_server import HubServer

COMMIT = r"^/api/datasets/org/[^/]+/commit/main$"


@pytest.fixture
def released_v1(hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str) -> str:
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == 0, err
    return repo_id


def storage_puts(hub: HubServer, since: int) -> list[str]:
    return [r.path for r in hub.requests[since:] if r.listener == "storage" and r.method == "PUT"]


def test_dropped_commit_leaves_the_repo_untouched_and_a_retry_succeeds(
    hub: HubServer, released_v1: str, build_b: BuildReport
) -> None:
    before = snapshot(hub, released_v1)
    hub.fail("POST", COMMIT, "drop")  # the Hub gets half the commit, then the line goes dead
    start = len(hub.requests)
    code, _, err = run_publish(build_b.out, "--repo", released_v1, "--version", "1.1.0")
    assert code == exit_codes.UNAVAILABLE
    assert "nothing was committed" in err and "tags are unchanged" in err
    assert any(r.status == 0 and "/commit/" in r.path for r in hub.requests[start:])
    after = snapshot(hub, released_v1)
    assert after["branches"] == before["branches"] and after["tags"] == before["tags"]
    assert after["commits"] == before["commits"]

    uploaded = set(storage_puts(hub, start))
    assert uploaded  # the changed data files reached the Hub's storage before the drop
    retry = len(hub.requests)
    code, out, err = run_publish(build_b.out, "--repo", released_v1, "--version", "1.1.0")
    assert code == 0, err
    assert storage_puts(hub, retry) == []  # nothing is sent twice
    repo = hub.repo(released_v1)
    assert repo.tags["v1.1.0"].target == repo.branches["main"]
    assert repo.commits[repo.branches["main"]].parents == (before["tags"]["v1.0.0"],)
    assert "published" in out


def test_commit_applied_but_answer_lost_is_tagged_by_the_retry(
    hub: HubServer, released_v1: str, build_b: BuildReport
) -> None:
    before = snapshot(hub, released_v1)
    hub.fail("POST", COMMIT, "drop_after")
    code, _, err = run_publish(build_b.out, "--repo", released_v1, "--version", "1.1.0")
    assert code == exit_codes.UNAVAILABLE and "main moved" in err
    repo = hub.repo(released_v1)
    landed = repo.branches["main"]
    assert landed != before["branches"]["main"] and "v1.1.0" not in repo.tags

    start = len(hub.requests)
    code, _, err = run_publish(build_b.out, "--repo", released_v1, "--version", "1.1.0")
    assert code == 0, err
    assert repo.branches["main"] == landed  # no second commit
    assert repo.tags["v1.1.0"].target == landed
    assert storage_puts(hub, start) == []
    assert [w for w in writes(hub, start) if "/commit/" in w or "/preupload/" in w] == []


def test_a_dropped_upload_is_retried_by_the_client(
    hub: HubServer, released_v1: str, build_b: BuildReport
) -> None:
    hub.fail("PUT", r"^/upload/", "drop")
    start = len(hub.requests)
    code, _, err = run_publish(build_b.out, "--repo", released_v1, "--version", "1.1.0")
    assert code == 0, err
    dropped = [r for r in hub.requests[start:] if r.status == 0]
    assert len(dropped) == 1 and dropped[0].listener == "storage"
    assert "v1.1.0" in hub.repo(released_v1).tags


@pytest.mark.parametrize("action", ["drop", "drop_after"])
def test_a_dropped_tag_request_is_retried_or_verified(
    hub: HubServer, released_v1: str, build_b: BuildReport, action: str
) -> None:
    hub.fail("POST", r"^/api/datasets/org/[^/]+/tag/", action)
    code, _, err = run_publish(build_b.out, "--repo", released_v1, "--version", "1.1.0")
    assert code == 0, err
    repo = hub.repo(released_v1)
    assert repo.tags["v1.1.0"].target == repo.branches["main"]


def test_a_first_publish_interrupted_leaves_no_release(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str, tmp_path: Path
) -> None:
    hub.fail("POST", COMMIT, "drop")
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.UNAVAILABLE and "nothing was committed" in err
    repo = hub.repo(repo_id)  # created, but holding only the Hub's initial commit
    assert repo.tags == {} and set(repo.resolve("main").files) == {".gitattributes"}
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == 0, err
    assert "v1.0.0" in repo.tags


def test_a_hub_error_is_one_line(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str
) -> None:
    # The client's HTTP errors span several lines (the URL, a link to MDN, a blank line).
    # A 500 is tried again (builder.fs.network): it lasts longer than the retries here.
    hub.fail("GET", r"^/api/whoami", "status", times=network.retries() + 1, status=500)
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err.strip().splitlines()) == 1 and "500" in err


def test_a_hub_that_blinks_is_asked_again(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str
) -> None:
    faults = [
        hub.fail("GET", r"^/api/whoami", "status", status=503),
        hub.fail("GET", r"^/api/datasets/org/[^/]+/refs$", "drop"),
    ]
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == 0, err
    assert [f.hits for f in faults] == [1, 1]  # each met once, then asked again
    assert "v1.0.0" in hub.repo(repo_id).tags


def test_a_hub_that_never_answers_times_out(
    build_a: BuildReport, repo_id: str, hf_token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket
    import time

    from huggingface_hub import constants

    with socket.socket() as silent:  # takes connections, never reads nor answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.setenv(network.RETRIES_ENV, "1")
        monkeypatch.setenv(network.TIMEOUT_ENV, "30")  # put back after --timeout sets it
        started = time.monotonic()
        code, _, err = run_publish(
            build_a.out, "--repo", repo_id, "--version", "1.0.0", "--timeout", "1"
        )
    assert code == exit_codes.UNAVAILABLE, err
    assert len(err.strip().splitlines()) == 1 and "timed out" in err.lower()
    assert time.monotonic() - started < 10  # two tries of a second, a pause between
