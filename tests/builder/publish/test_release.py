"""The release flow against the local Hub, through the real ``huggingface_hub`` and ``datasets``.

v1.0.0 (build A plus an 11 MB data file), then v1.1.0 (build B): each tag loads exactly its
build's rows; the large file took the LFS multipart path; v1.1.0 deleted what B no longer has
and did not re-send unchanged bytes; republishing v1.1.0 or an older version is refused and
changes nothing; the build folders are never modified.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from builder import errors as exit_codes
from builder.pipeline import BuildReport
from tests.builder.publish.conftest import WRITE_TOKEN, add_data_file
from tests.builder.publish.helpers import (
    build_rows,
    folder_bytes,
    repo_text,
    run_publish,
    snapshot,
    writes,
)
from tests.hub_server import HubServer

LARGE = "large/train-00000-of-00001.parquet"


def large_parquet(size: int) -> bytes:
    """A real Parquet file of ``size``+ bytes of incompressible data."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"blob": [os.urandom(size)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="none")
    return sink.getvalue()


@pytest.fixture(scope="module")
def released(
    hub: HubServer,
    build_a: BuildReport,
    build_b: BuildReport,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict:
    """Publish v1.0.0 and v1.1.0 once for the module; keep what each step saw."""
    import shutil

    mp = pytest.MonkeyPatch()
    mp.setenv("HF_TOKEN", WRITE_TOKEN)
    root = tmp_path_factory.mktemp("releases")
    a, b = root / "a", root / "b"
    shutil.copytree(build_a.out, a)
    shutil.copytree(build_b.out, b)
    add_data_file(a, LARGE, large_parquet(11 * 1024 * 1024))
    before = {"a": folder_bytes(a), "b": folder_bytes(b)}
    repo_id = "org/agent-traces"
    steps = {}
    for name, folder, version in (("v1.0.0", a, "1.0.0"), ("v1.1.0", b, "1.1.0")):
        start = len(hub.requests)
        code, out, err = run_publish(folder, "--repo", repo_id, "--version", version)
        steps[name] = {"code": code, "out": out, "err": err, "requests": hub.requests[start:]}
    mp.undo()
    return {"repo": repo_id, "a": a, "b": b, "before": before, "steps": steps}


def test_both_releases_succeed_and_are_tagged(hub: HubServer, released: dict) -> None:
    for name in ("v1.0.0", "v1.1.0"):
        step = released["steps"][name]
        assert step["code"] == 0, step["err"]
        assert f"published {released['repo']} {name}" in step["out"]
    repo = hub.repo(released["repo"])
    assert set(repo.tags) == {"v1.0.0", "v1.1.0"}
    assert repo.tags["v1.1.0"].target == repo.branches["main"]
    # One commit per release on top of the repository's initial commit.
    head = repo.commits[repo.branches["main"]]
    assert head.parents == (repo.tags["v1.0.0"].target,)
    assert len(repo.commits) == 3


@pytest.mark.parametrize(("tag", "folder"), [("v1.0.0", "a"), ("v1.1.0", "b")])
def test_each_tag_loads_exactly_its_build(
    released: dict, tag: str, folder: str, tmp_path: Path
) -> None:
    import datasets

    expected = build_rows(released[folder], "sft")
    loaded = datasets.load_dataset(
        released["repo"], "sft", revision=tag, cache_dir=str(tmp_path / "cache")
    )
    assert set(loaded) == set(expected)
    for split, rows in expected.items():
        assert loaded[split].to_list() == rows, f"{tag} {split}"


def test_each_tag_holds_exactly_the_release_files(hub: HubServer, released: dict) -> None:
    repo = hub.repo(released["repo"])
    for tag, folder in (("v1.0.0", "a"), ("v1.1.0", "b")):
        files = set(repo.resolve(tag).files)
        assert files == set(released["before"][folder]) | {".gitattributes"}
    # v1.1.0 deleted what build B no longer has, the large file among them.
    assert LARGE in repo.resolve("v1.0.0").files
    assert LARGE not in repo.resolve("v1.1.0").files
    assert "deleted" in released["steps"]["v1.1.0"]["out"]


def test_data_files_are_published_byte_for_byte(hub: HubServer, released: dict) -> None:
    repo = hub.repo(released["repo"])
    for tag, folder in (("v1.0.0", "a"), ("v1.1.0", "b")):
        commit = repo.resolve(tag)
        for rel, data in released["before"][folder].items():
            if rel.endswith(".parquet"):
                assert repo.content(commit.files[rel]) == data, rel


def test_a_file_over_10mb_goes_through_the_lfs_multipart_path(
    hub: HubServer, released: dict
) -> None:
    repo = hub.repo(released["repo"])
    entry = repo.resolve("v1.0.0").files[LARGE]
    assert entry.size > 10 * 1024 * 1024 and entry.sha256 is not None
    paths = [(r.listener, r.method, r.path) for r in released["steps"]["v1.0.0"]["requests"]]
    assert ("hub", "POST", "/datasets/org/agent-traces.git/info/lfs/objects/batch") in paths
    parts = [p for p in paths if p[2].startswith(f"/upload/{entry.sha256}/part/")]
    assert len(parts) == 3 and all(p[0] == "storage" and p[1] == "PUT" for p in parts)
    assert ("storage", "POST", f"/upload/{entry.sha256}/complete") in paths


def test_unchanged_bytes_are_not_sent_again(hub: HubServer, released: dict) -> None:
    a, b = released["before"]["a"], released["before"]["b"]
    # Parquet files and the card's images travel as LFS objects (storage PUTs).
    stored = (".parquet", ".png")
    same = [p for p in b if p.endswith(stored) and a.get(p) == b[p]]
    sent = {
        r.path.split("/")[2]
        for r in released["steps"]["v1.1.0"]["requests"]
        if r.listener == "storage" and r.method == "PUT"
    }
    import hashlib

    for rel in same:
        assert hashlib.sha256(b[rel]).hexdigest() not in sent, rel
    changed = [p for p in b if p.endswith(stored) and a.get(p) != b[p]]
    assert len(sent) == len(changed)
    out = released["steps"]["v1.1.0"]["out"]
    assert f"{len(same)} already on main or the latest release" in out
    assert f"{len(changed) + 2} file(s) new" in out  # + README.md and manifest.json


def test_release_is_recorded_in_manifest_and_card(hub: HubServer, released: dict) -> None:
    repo_id = released["repo"]
    first = json.loads(repo_text(hub, repo_id, "v1.0.0", "manifest.json"))
    second = json.loads(repo_text(hub, repo_id, "v1.1.0", "manifest.json"))
    assert first["release"]["version"] == "1.0.0"
    assert first["release"]["previous_version"] is None
    assert first["release"]["changes"]["first_release"] is True
    release = second["release"]
    assert (release["version"], release["tag"]) == ("1.1.0", "v1.1.0")
    assert (release["previous_version"], release["previous_tag"]) == ("1.0.0", "v1.0.0")
    changes = release["changes"]
    assert changes["schema_version"]["changed"] is False
    before, after = json.loads(released["before"]["a"]["manifest.json"]), second
    for config, splits in changes["rows"].items():
        for split, n in splits.items():
            old = before["configs"].get(config, {}).get("rows", {}).get(split, 0)
            new = after["configs"][config]["rows"].get(split, 0)
            assert (n["before"], n["after"]) == (old, new)
            assert n["net"] == new - old
    assert changes["rows"]["sft"]  # build B has more episodes: sft rows changed
    # The rest of the manifest is the build's own.
    build_manifest = json.loads(released["before"]["b"]["manifest.json"])
    assert {k: v for k, v in second.items() if k not in ("release", "card_sha256")} == {
        k: v for k, v in build_manifest.items() if k != "card_sha256"
    }

    card = repo_text(hub, repo_id, "v1.1.0", "README.md")
    # ... and its card digest is the release card's: a downloaded release passes the gate
    assert second["card_sha256"] == hashlib.sha256(card.encode()).hexdigest()
    assert "## Release" in card and "version **1.1.0**" in card
    assert "previous version is 1.0.0 (`v1.0.0`)" in card
    assert 'load_dataset("org/agent-traces", "sft", revision="v1.1.0")' in card
    assert "| `sft` | train |" in card
    # The card keeps its YAML (datasets loads configs from it) and the rest of its text.
    original = released["before"]["b"]["README.md"].decode()
    assert card.replace(card[card.index("## Release") : card.index("## Rows")], "") == original


def test_the_build_folders_are_never_modified(released: dict) -> None:
    for name in ("a", "b"):
        assert folder_bytes(released[name]) == released["before"][name]
        siblings = [p.name for p in released[name].parent.iterdir()]
        assert not [s for s in siblings if ".release-" in s], siblings


@pytest.mark.parametrize(
    ("build", "version", "reason"),
    [
        ("a", "1.1.0", "already exists"),  # another build under a published version
        ("a", "1.0.5", "not greater than the latest release 1.1.0"),
        ("b", "1.0.5", "not greater than the latest release 1.1.0"),
    ],
)
def test_republishing_or_going_back_is_refused_and_changes_nothing(
    hub: HubServer,
    released: dict,
    hf_token: str,
    build: str,
    version: str,
    reason: str,
) -> None:
    before = snapshot(hub, released["repo"])
    start = len(hub.requests)
    code, _, err = run_publish(released[build], "--repo", released["repo"], "--version", version)
    assert code == exit_codes.REFUSED
    assert reason in err and "nothing was uploaded" in err
    assert writes(hub, start) == []
    assert snapshot(hub, released["repo"]) == before


@pytest.mark.parametrize(("build", "version"), [("a", "1.0.0"), ("b", "1.1.0")])
def test_the_same_command_again_after_a_release_is_done(
    hub: HubServer, released: dict, hf_token: str, build: str, version: str
) -> None:
    # A job killed after tagging, or an answer lost, then run again: the tag already holds
    # exactly this build's release, so there is nothing to do (exit 0), and nothing is sent.
    before = snapshot(hub, released["repo"])
    start = len(hub.requests)
    code, out, err = run_publish(released[build], "--repo", released["repo"], "--version", version)
    assert code == 0, err
    assert f"v{version} is already this build's release" in out
    assert writes(hub, start) == []
    assert snapshot(hub, released["repo"]) == before


def test_a_version_that_is_not_semver_is_a_usage_error(
    hub: HubServer, released: dict, hf_token: str
) -> None:
    start = len(hub.requests)
    code, _, err = run_publish(released["b"], "--repo", released["repo"], "--version", "1.2")
    assert code == exit_codes.USAGE and "not a semantic version" in err
    assert hub.requests[start:] == []
