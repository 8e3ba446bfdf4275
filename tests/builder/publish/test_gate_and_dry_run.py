"""The pre-publish gate refuses edited or failed builds before any network call; a dry run
prints the plan and changes nothing, on the Hub or on disk."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from builder import errors as exit_codes
from builder.cli.episodes import main
from builder.pipeline import BuildReport
from tests.builder.publish.helpers import folder_bytes, run_publish, snapshot, writes
from tests.hub_server import HubServer

# The episode file's segment; the name ends in a digest of the file's content.
DATA = "sft/train-00001-00000-of-00001-"


def data_file(folder: Path) -> Path:
    (path,) = (folder / "sft").glob("train-00001-00000-of-00001-*.parquet")
    return path


def set_manifest(folder: Path, **changes: object) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def edit_parquet(folder: Path) -> None:
    data = bytearray(data_file(folder).read_bytes())
    data[len(data) // 2] ^= 0xFF
    data_file(folder).write_bytes(bytes(data))


def add_stray(folder: Path) -> None:
    (folder / "sft" / "train-00001-of-00001.parquet").write_bytes(b"PAR1 stray")


def remove_data(folder: Path) -> None:
    data_file(folder).unlink()


def fail_checks(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["checks"]["episodes_by_kind"]["verified_mismatch"] = 2
    set_manifest(folder, checks=manifest["checks"])


def drop_digests(folder: Path) -> None:
    set_manifest(folder, files={})


def edit_card(folder: Path) -> None:
    card = folder / "README.md"
    card.write_text(card.read_text().replace("pretty_name:", "pretty_name: edited", 1))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (edit_parquet, ".parquet: changed since the build"),
        (add_stray, "train-00001-of-00001.parquet: not written by the build"),
        (remove_data, ".parquet: listed in the manifest but missing"),
        (fail_checks, "failed integrity checks (verified_mismatch 2)"),
        (drop_digests, "has no 'files' digests"),
        (edit_card, "README.md: changed since the build"),
    ],
)
def test_gate_refuses_before_touching_the_hub(
    hub: HubServer,
    build_a: BuildReport,
    copy_build,
    repo_id: str,
    hf_token: str,
    damage,
    message: str,
) -> None:
    folder = copy_build(build_a)
    damage(folder)
    start = len(hub.requests)
    code, _, err = run_publish(folder, "--repo", repo_id, "--version", "1.0.0")
    assert code == exit_codes.REFUSED, err
    assert message in err and "nothing was uploaded" in err
    if damage in (edit_parquet, remove_data):
        assert DATA in err
    assert hub.requests[start:] == []


def test_failed_checks_can_be_published_when_explicitly_allowed(
    hub: HubServer, build_a: BuildReport, copy_build, repo_id: str, hf_token: str
) -> None:
    folder = copy_build(build_a)
    fail_checks(folder)
    args = (folder, "--repo", repo_id, "--version", "1.0.0", "--dry-run")
    assert run_publish(*args)[0] == exit_codes.REFUSED
    code, out, err = run_publish(*args, "--allow-failed-checks")
    assert code == 0, err
    assert "dry run" in out


def test_dry_run_of_a_new_repo_creates_nothing(
    hub: HubServer, build_a: BuildReport, copy_build, repo_id: str, hf_token: str
) -> None:
    folder = copy_build(build_a)
    before = folder_bytes(folder)
    start = len(hub.requests)
    code, out, err = run_publish(folder, "--repo", repo_id, "--version", "1.0.0", "--dry-run")
    assert code == 0, err
    assert "will be created" in out and "then tag the commit v1.0.0" in out
    assert f"+ {DATA}" in out and "new file" in out
    assert "dry run: nothing was uploaded" in out
    assert writes(hub, start) == []
    assert f"datasets/{repo_id}" not in hub.state.repos
    assert folder_bytes(folder) == before
    assert sorted(p.name for p in folder.parent.iterdir()) == ["dataset"]


def test_dry_run_of_a_next_release_shows_the_plan_and_changes_nothing(
    hub: HubServer,
    build_a: BuildReport,
    build_b: BuildReport,
    copy_build,
    repo_id: str,
    hf_token: str,
) -> None:
    assert run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")[0] == 0
    before = snapshot(hub, repo_id)
    folder = copy_build(build_b)
    start = len(hub.requests)
    code, out, err = run_publish(folder, "--repo", repo_id, "--version", "2.0.0", "--dry-run")
    assert code == 0, err
    assert "version 2.0.0 (tag v2.0.0); previous version: 1.0.0 (v1.0.0)" in out
    assert "~ README.md" in out and "~ manifest.json" in out
    assert "already on main or the latest release" in out and "to upload" in out
    assert "release notes (the card's Release section):" in out
    assert "| config | split | rows before | rows after | net change |" in out
    assert not [line for line in out.splitlines() if line and not line.strip()]
    assert "the data files are those of" not in out
    assert writes(hub, start) == []
    assert snapshot(hub, repo_id) == before
    assert not [r for r in hub.requests[start:] if r.listener == "storage"]


def test_a_release_of_the_same_data_says_so(
    hub: HubServer, build_a: BuildReport, copy_build, repo_id: str, hf_token: str
) -> None:
    assert run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0")[0] == 0
    folder = copy_build(build_a)
    code, out, err = run_publish(folder, "--repo", repo_id, "--version", "1.0.1", "--dry-run")
    assert code == 0, err
    assert "note: the data files are those of v1.0.0" in out
    assert "Row counts are unchanged in every config and split." in out


def test_dry_run_without_a_token_plans_with_anonymous_reads(
    hub: HubServer, build_a: BuildReport, repo_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    start = len(hub.requests)
    code, out, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0", "--dry-run")
    assert code == 0, err
    assert "no token found" in out
    assert not [r for r in hub.requests[start:] if r.authorization]


def test_repo_must_be_org_slash_name(build_a: BuildReport, hf_token: str, tmp_path: Path) -> None:
    code, _, err = run_publish(
        build_a.out, "--version", "1.0.0", "--config", _empty_config(tmp_path)
    )
    assert code == exit_codes.USAGE and "--repo must be ORG/NAME" in err
    code, _, err = run_publish(build_a.out, "--repo", "no-slash", "--version", "1.0.0")
    assert code == exit_codes.USAGE


@pytest.mark.parametrize("name", ["org/bad name", "org/x--y", "org/-lead", "org/name.git"])
def test_a_repo_name_the_hub_refuses_is_a_usage_error_before_any_request(
    hub: HubServer, build_a: BuildReport, hf_token: str, name: str
) -> None:
    start = len(hub.requests)
    code, _, err = run_publish(build_a.out, "--repo", name, "--version", "1.0.0", "--dry-run")
    assert code == exit_codes.USAGE, err
    assert f"--repo {name!r} is not a Hub repository name" in err
    assert len(err.strip().splitlines()) == 1
    assert hub.requests[start:] == []


def test_a_read_only_parent_folder_still_publishes(
    hub: HubServer,
    build_a: BuildReport,
    copy_build,
    repo_id: str,
    hf_token: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A build in a folder the user may not write beside (a mounted CI artifact): the release
    # is staged in the system's temporary folder instead.
    folder = copy_build(build_a)
    real = tempfile.mkdtemp

    def mkdtemp(*args: object, **kwargs: object) -> str:
        if kwargs.get("dir") == folder.parent:
            raise PermissionError(13, "Permission denied", str(folder.parent))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    code, _, err = run_publish(folder, "--repo", repo_id, "--version", "1.0.0")
    assert code == 0, err
    assert "v1.0.0" in hub.repo(repo_id).tags


def _empty_config(tmp_path: Path) -> Path:
    path = tmp_path / "dataset.toml"
    path.write_text("[output]\nout = 'dataset'\n")
    return path


def test_private_flag_creates_a_private_repo(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str
) -> None:
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0", "--private")
    assert code == 0, err
    assert hub.repo(repo_id).private


def test_public_flag_overrides_a_private_config(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str, tmp_path: Path
) -> None:
    config = tmp_path / "dataset.toml"
    config.write_text("[publish]\nprivate = true\n")
    args = (build_a.out, "--repo", repo_id, "--version", "1.0.0", "--config", config)
    code, _, err = run_publish(*args, "--public")
    assert code == 0, err
    assert not hub.repo(repo_id).private
    both = ["publish", *map(str, args), "--public", "--private"]
    assert main(both) == exit_codes.USAGE  # one or the other


def test_a_private_release_into_a_public_repository_is_refused(
    hub: HubServer, build_a: BuildReport, repo_id: str, hf_token: str
) -> None:
    """Asked to be private, a release never goes into a repository anyone can read: refused
    before any upload (a dry run too), the repository unchanged."""
    code, _, err = run_publish(build_a.out, "--repo", repo_id, "--version", "1.0.0", "--public")
    assert code == 0, err
    before = snapshot(hub, repo_id)
    for extra in ((), ("--dry-run",)):
        args = (build_a.out, "--repo", repo_id, "--version", "1.1.0", "--private", *extra)
        code, _, err = run_publish(*args)
        assert code == exit_codes.REFUSED, err
        assert err.count("\n") == 1 and "exists and is public" in err and "--public" in err
        assert snapshot(hub, repo_id) == before
    assert not hub.repo(repo_id).private
