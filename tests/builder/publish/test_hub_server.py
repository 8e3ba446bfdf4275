"""The local Hub answers like the Hub: checked through ``huggingface_hub`` itself and raw HTTP.

These pin the behaviours the publish tests rely on, so a failure points at the server rather
than at the publishing code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.builder.publish.conftest import OTHER_TOKEN, WRITE_TOKEN
from tests.hub_server import HubServer
from tests.hub_server.git import blob_oid


@pytest.fixture
def api(hub: HubServer):
    from huggingface_hub import HfApi

    return HfApi(token=WRITE_TOKEN)


@pytest.fixture
def small_repo(api, repo_id: str) -> dict:
    """A repo with a text file, a binary (LFS) file, and a tag on the first release commit."""
    from huggingface_hub import CommitOperationAdd

    api.create_repo(repo_id, repo_type="dataset")
    blob = bytes(range(256)) * 40
    info = api.create_commit(
        repo_id,
        [
            CommitOperationAdd("README.md", b"---\npretty_name: t\n---\n# t\n"),
            CommitOperationAdd("data/x.bin", blob),
            CommitOperationAdd("data/sub/notes.txt", b"hello\n"),
        ],
        commit_message="first",
        repo_type="dataset",
    )
    api.create_tag(repo_id, tag="v1.0.0", revision=info.oid, repo_type="dataset")
    return {"repo": repo_id, "commit": info.oid, "blob": blob}


def test_new_repo_has_the_hubs_initial_commit(api, repo_id: str, hub: HubServer) -> None:
    url = api.create_repo(repo_id, repo_type="dataset", private=True)
    assert url.repo_id == repo_id and url.repo_type == "dataset"
    refs = api.list_repo_refs(repo_id, repo_type="dataset")
    assert [b.name for b in refs.branches] == ["main"] and refs.tags == []
    assert [f.path for f in api.list_repo_tree(repo_id, repo_type="dataset")] == [".gitattributes"]
    commits = api.list_repo_commits(repo_id, repo_type="dataset")
    assert [c.title for c in commits] == ["initial commit"]
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)  # 409 tolerated
    from huggingface_hub.errors import HfHubHTTPError

    with pytest.raises(HfHubHTTPError) as caught:
        api.create_repo(repo_id, repo_type="dataset")
    assert caught.value.response.status_code == 409


def test_upload_modes_and_tree(api, small_repo: dict) -> None:
    repo = small_repo["repo"]
    info = api.dataset_info(repo, revision="v1.0.0", files_metadata=True)
    assert info.sha == small_repo["commit"]
    assert info.card_data.pretty_name == "t"
    siblings = {s.rfilename: s for s in info.siblings}
    assert siblings["data/x.bin"].lfs.sha256 == hashlib.sha256(small_repo["blob"]).hexdigest()
    assert siblings["data/sub/notes.txt"].lfs is None
    assert siblings["data/sub/notes.txt"].blob_id == blob_oid(b"hello\n")
    top = {e.path: type(e).__name__ for e in api.list_repo_tree(repo, repo_type="dataset")}
    assert top == {"data": "RepoFolder", ".gitattributes": "RepoFile", "README.md": "RepoFile"}
    deep = [e.path for e in api.list_repo_tree(repo, "data", recursive=True, repo_type="dataset")]
    assert deep == ["data/sub", "data/sub/notes.txt", "data/x.bin"]
    expanded = next(iter(api.list_repo_tree(repo, "data", expand=True, repo_type="dataset")))
    assert expanded.last_commit.oid == small_repo["commit"]
    paths = api.get_paths_info(repo, ["data/x.bin", "data/sub", "nope"], repo_type="dataset")
    assert [(p.path, type(p).__name__) for p in paths] == [
        ("data/x.bin", "RepoFile"),
        ("data/sub", "RepoFolder"),
    ]


def test_unchanged_files_are_skipped_and_parent_commit_is_enforced(api, small_repo: dict) -> None:
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub.errors import HfHubHTTPError

    repo, first = small_repo["repo"], small_repo["commit"]
    same = api.create_commit(
        repo,
        [CommitOperationAdd("data/x.bin", small_repo["blob"])],
        commit_message="noop",
        repo_type="dataset",
    )
    assert same.oid == first  # preupload reported the remote oid: no empty commit
    api.create_commit(
        repo, [CommitOperationAdd("new.txt", b"1")], commit_message="two", repo_type="dataset"
    )
    with pytest.raises(HfHubHTTPError) as caught:
        api.create_commit(
            repo,
            [CommitOperationAdd("other.txt", b"2")],
            commit_message="stale",
            repo_type="dataset",
            parent_commit=first,
        )
    assert caught.value.response.status_code == 412


def test_errors_map_to_the_clients_exceptions(api, small_repo: dict, hub: HubServer) -> None:
    from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo = small_repo["repo"]
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("org/does-not-exist")
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(repo, revision="v9.9.9")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(repo, "missing.txt", repo_type="dataset", revision="v1.0.0")
    with pytest.raises(HfHubHTTPError) as caught:
        api.create_tag(repo, tag="v1.0.0", repo_type="dataset")
    assert caught.value.response.status_code == 409
    with pytest.raises(HfHubHTTPError) as caught:  # a valid token without rights on "org"
        HfApi(token=OTHER_TOKEN).create_commit(
            repo, [CommitOperationAdd("x.txt", b"x")], commit_message="x", repo_type="dataset"
        )
    assert caught.value.response.status_code == 403


def test_private_repos_are_invisible_without_access(api, repo_id: str) -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    api.create_repo(repo_id, repo_type="dataset", private=True)
    assert api.dataset_info(repo_id).private is True
    for other in (HfApi(token=False), HfApi(token=OTHER_TOKEN)):
        with pytest.raises(RepositoryNotFoundError):
            other.dataset_info(repo_id)


def test_resolve_headers_ranges_and_lfs_redirect(small_repo: dict, hub: HubServer) -> None:
    import httpx2

    repo, commit = small_repo["repo"], small_repo["commit"]
    text = f"{hub.url}/datasets/{repo}/resolve/v1.0.0/data/sub/notes.txt"
    with httpx2.Client() as http:
        head = http.head(text)
        assert head.status_code == 200
        assert head.headers["X-Repo-Commit"] == commit
        assert head.headers["ETag"] == '"' + blob_oid(b"hello\n") + '"'
        assert head.headers["Content-Length"] == "6"
        part = http.get(text, headers={"Range": "bytes=1-3"})
        assert (part.status_code, part.content) == (206, b"ell")
        assert part.headers["Content-Range"] == "bytes 1-3/6"
        assert http.get(text, headers={"Range": "bytes=10-"}).status_code == 416
        assert http.get(text, headers={"Range": "bytes=-2"}).content == b"o\n"

        binary = f"{hub.url}/datasets/{repo}/resolve/{commit[:7]}/data/x.bin"
        moved = http.head(binary)
        sha = hashlib.sha256(small_repo["blob"]).hexdigest()
        assert moved.status_code == 302
        assert moved.headers["X-Linked-Etag"] == f'"{sha}"'
        assert moved.headers["X-Linked-Size"] == str(len(small_repo["blob"]))
        assert moved.headers["Location"].startswith(hub.storage_url)
        ranged = http.get(moved.headers["Location"], headers={"Range": "bytes=256-259"})
        assert ranged.content == bytes([0, 1, 2, 3])
        forged = moved.headers["Location"].replace("sig=", "sig=0")
        assert http.get(forged).status_code == 403
        missing = http.head(f"{hub.url}/datasets/{repo}/resolve/v1.0.0/nope")
        assert missing.headers["X-Error-Code"] == "EntryNotFound"
        assert missing.headers["X-Repo-Commit"] == commit


def test_downloads_through_the_client_and_hffs(small_repo: dict, tmp_path: Path) -> None:
    from huggingface_hub import HfFileSystem, hf_hub_download

    repo = small_repo["repo"]
    path = hf_hub_download(
        repo, "data/x.bin", repo_type="dataset", revision="v1.0.0", cache_dir=tmp_path
    )
    assert Path(path).read_bytes() == small_repo["blob"]
    assert Path(path).parent.parent.name == small_repo["commit"]  # snapshots/<commit>/data/
    fs = HfFileSystem(skip_instance_cache=True)
    with fs.open(f"datasets/{repo}@v1.0.0/data/x.bin", "rb", block_size=1000) as handle:
        handle.seek(5000)
        assert handle.read(10) == small_repo["blob"][5000:5010]
    assert fs.glob(f"datasets/{repo}@v1.0.0/data/**/*.txt") == [
        f"datasets/{repo}@v1.0.0/data/sub/notes.txt"
    ]


def test_tree_pagination_follows_the_link_header(api, repo_id: str) -> None:
    from huggingface_hub import CommitOperationAdd

    api.create_repo(repo_id, repo_type="dataset")
    ops = [CommitOperationAdd(f"f/{i:04d}.txt", b"%d" % i) for i in range(1100)]
    api.create_commit(repo_id, ops, commit_message="many", repo_type="dataset")
    listed = [e.path for e in api.list_repo_tree(repo_id, "f", repo_type="dataset")]
    assert listed == [f"f/{i:04d}.txt" for i in range(1100)]


def test_deletions_and_invalid_commits(api, small_repo: dict) -> None:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import EntryNotFoundError

    repo = small_repo["repo"]
    api.create_commit(
        repo, [CommitOperationDelete("data/")], commit_message="rm", repo_type="dataset"
    )
    assert {f.path for f in api.list_repo_tree(repo, repo_type="dataset")} == {
        ".gitattributes",
        "README.md",
    }
    with pytest.raises(EntryNotFoundError):
        api.create_commit(
            repo, [CommitOperationDelete("nope.txt")], commit_message="x", repo_type="dataset"
        )
    with pytest.raises(ValueError, match="Invalid metadata"):
        api.create_commit(
            repo,
            [CommitOperationAdd("README.md", b"---\n- not: [a mapping\n---\n")],
            commit_message="x",
            repo_type="dataset",
        )
