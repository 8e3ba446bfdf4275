"""The token: from HF_TOKEN or the saved login, checked before anything is written, and never
printed, logged or written into the card, manifest, build folder, cache or Hub contents."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from builder import errors as exit_codes
from builder.pipeline import BuildReport
from tests.builder.publish.conftest import OTHER_TOKEN, READ_TOKEN, WRITE_TOKEN
from tests.builder.publish.helpers import run_publish, writes
from tests.hub_server import HubServer


def test_missing_token_is_refused_with_a_clear_message(
    hub: HubServer, build_a: BuildReport, repo_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    start = len(hub.requests)
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.REFUSED
    assert "no Hugging Face token" in err and "HF_TOKEN" in err and "hf auth login" in err
    assert hub.requests[start:] == []  # refused before talking to the Hub


@pytest.mark.parametrize(
    ("token", "message"),
    [("hf_not_a_real_token_123", "rejected the token"), (READ_TOKEN, "read-only")],
)
def test_rejected_or_read_only_token_is_refused(
    hub: HubServer,
    build_a: BuildReport,
    repo_id: str,
    monkeypatch: pytest.MonkeyPatch,
    token: str,
    message: str,
) -> None:
    monkeypatch.setenv("HF_TOKEN", token)
    start = len(hub.requests)
    code, out, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.REFUSED and message in err and "nothing was uploaded" in err
    assert token not in out + err
    assert writes(hub, start) == []
    assert f"datasets/{repo_id}" not in hub.state.repos


def test_a_token_without_rights_on_the_namespace_fails_cleanly(
    hub: HubServer, build_a: BuildReport, repo_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", OTHER_TOKEN)  # valid, but not a member of "org"
    code, out, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.REFUSED and "no write access to" in err and "HTTP 403" in err
    assert OTHER_TOKEN not in out + err
    assert f"datasets/{repo_id}" not in hub.state.repos


def test_saved_login_is_used_when_hf_token_is_unset(
    hub: HubServer, build_a: BuildReport, repo_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    saved = Path(constants.HF_TOKEN_PATH)
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(WRITE_TOKEN)
    try:
        code, out, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    finally:
        saved.unlink()
    assert code == 0, err
    assert "as tester" in out


def test_the_token_never_appears_in_output_logs_or_files(
    hub: HubServer,
    build_a: BuildReport,
    build_b: BuildReport,
    repo_id: str,
    hf_token: str,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    import datasets
    from huggingface_hub import constants

    caplog.set_level(logging.DEBUG)
    outputs = []
    for folder, version in ((build_a.out, "1.0.0"), (build_b.out, "1.1.0")):
        outputs += run_publish(folder, "--repo", repo_id, "--version", version, "--dry-run")[1:]
        outputs += run_publish(folder, "--repo", repo_id, "--version", version)[1:]
    outputs += run_publish(build_b.out, "--repo", repo_id, "--version", "1.1.0")[1:]  # refused
    datasets.load_dataset(repo_id, "sft", revision="v1.1.0", cache_dir=str(tmp_path / "c"))
    captured = capfd.readouterr()
    texts = [*outputs, captured.out, captured.err, caplog.text]
    assert all(hf_token not in t for t in texts)

    repo = hub.repo(repo_id)
    stored = [*repo.blobs.values(), *repo.lfs.values()]
    stored += [c.message.encode() for c in repo.commits.values()]
    stored += [t.message.encode() for t in repo.tags.values()]
    assert all(hf_token.encode() not in data for data in stored)

    folders = [build_a.out.parent, build_b.out.parent, tmp_path, Path(constants.HF_HOME)]
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and path.name != "token":
                assert hf_token.encode() not in path.read_bytes(), path
    # Uploads and downloads to the object storage never carry the token either.
    assert not [r for r in hub.requests if r.listener == "storage" and r.authorization]


def test_a_hub_that_cannot_be_read_says_what_to_do(
    hub: HubServer,
    build_a: BuildReport,
    repo_id: str,
    hf_token: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from builder.publish.hub import Hub

    def refused(self: Hub) -> None:
        raise ConnectionError("[Errno 111] Connection refused")

    monkeypatch.setattr(Hub, "state", refused)
    start = len(hub.requests)
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.UNAVAILABLE, err
    (line,) = err.strip().splitlines()
    assert "Connection refused" in line and "nothing was uploaded" in line
    assert line.endswith("check the network and HF_ENDPOINT, then run the same command again")
    assert writes(hub, start) == []


def test_an_endpoint_that_is_not_a_hub_is_named_not_the_token(
    hub: HubServer,
    build_a: BuildReport,
    repo_id: str,
    hf_token: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that answers 404 to the token check is no Hub (HF_ENDPOINT names another
    server): said so, not as a token that could not be checked."""
    import httpx2 as httpx
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    def not_found(self: HfApi, *_: object, **__: object) -> None:
        request = httpx.Request("GET", f"{self.endpoint}/api/whoami-v2")
        raise HfHubHTTPError("404 Not Found", response=httpx.Response(404, request=request))

    monkeypatch.setattr(HfApi, "whoami", not_found)
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.UNAVAILABLE, err
    (line,) = err.strip().splitlines()
    assert "does not answer like a Hugging Face Hub (HTTP 404" in line
    assert "HF_ENDPOINT names another server" in line and "check the token" not in line
