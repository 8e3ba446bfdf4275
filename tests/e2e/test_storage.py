"""Inputs read from, and builds copied to, an object store: a real S3 API (moto's server)
reached through ``pyarrow.fs`` exactly as a bucket on AWS or any S3-compatible store."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.fs as pafs
import pytest

import builder.ingest.files as ingest_module
from builder.cli.episodes import main
from builder.config import BuildConfig
from builder.fs import storage
from builder.pipeline import UploadFailed, build
from builder.sources.inputs import InputError, expand_inputs

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data/episodes/episodes.jsonl"


@pytest.fixture(scope="module")
def bucket() -> Iterator[str]:
    """A bucket on a local S3 server; credentials and endpoint come from the standard AWS
    variables, as they would for a real store."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    patch = pytest.MonkeyPatch()
    for key, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        patch.setenv(key, value)
    storage._filesystem.cache_clear()
    admin = pafs.S3FileSystem(
        endpoint_override=f"{host}:{port}", scheme="http", allow_bucket_creation=True
    )
    admin.create_dir("data")
    yield "s3://data"
    storage._filesystem.cache_clear()
    patch.undo()
    server.stop()


@pytest.fixture
def store_out_of_reach(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """S3 settings whose endpoint is a port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for key, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(key, value)
    storage._filesystem.cache_clear()
    yield
    storage._filesystem.cache_clear()


def put(uri: str, data: bytes) -> None:
    fs, path = storage.resolve(uri)
    with fs.open_output_stream(path) as out:
        out.write(data)


def listing(uri: str) -> dict[str, bytes]:
    fs, path = storage.resolve(uri)
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    files = [i for i in infos if i.type == pafs.FileType.File]
    return {i.path[len(path) + 1 :]: fs.open_input_stream(i.path).read() for i in files}


def local_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def config_for(tmp_path: Path, name: str, **options: Any) -> BuildConfig:
    # Each build's rejects file sits beside its output under the same name: the manifest
    # records where (relative to the output), so builds compared byte for byte share it.
    return replace(
        BuildConfig(),
        out=tmp_path / name / "dataset",
        rejects=tmp_path / name / "rejects.jsonl",
        **options,
    )


def test_episodes_are_read_from_an_object_store(bucket: str, tmp_path: Path) -> None:
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(b"".join(lines[:half]))
    (tmp_path / "in" / "b.jsonl.gz").write_bytes(gzip.compress(b"".join(lines[half:])))
    for name in ("a.jsonl", "b.jsonl.gz"):
        put(f"{bucket}/in/day/{name}", (tmp_path / "in" / name).read_bytes())
    put(f"{bucket}/in/notes.txt", b"not an input")

    remote = build(config_for(tmp_path, "remote", episodes=(f"{bucket}/in/**/*.jsonl*",)))
    local = build(config_for(tmp_path, "local", episodes=(str(tmp_path / "in" / "*.jsonl*"),)))

    inputs = remote.manifest["inputs"]
    assert [i["path"] for i in inputs] == [
        f"{bucket}/in/day/a.jsonl",
        f"{bucket}/in/day/b.jsonl.gz",
    ]
    assert [i["sha256"] for i in inputs] == [
        hashlib.sha256((tmp_path / "in" / n).read_bytes()).hexdigest()
        for n in ("a.jsonl", "b.jsonl.gz")
    ]
    assert remote.manifest["configs"] == local.manifest["configs"]
    for name in ("sft", "dpo", "turns"):  # no column names the input file
        assert local_files(remote.out / name) == local_files(local.out / name), (
            f"{name} differs between the object store and local inputs"
        )
    episodes = pl.read_parquet(remote.out / "episodes" / "*.parquet")
    assert set(episodes["source_file"]) == {i["path"] for i in inputs}


def test_object_store_inputs_are_cached_by_size_and_mtime(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(f"{bucket}/cached/a.jsonl", SAMPLE.read_bytes())
    batches = []
    normalize = ingest_module.normalize_batch

    def counted(*args: Any) -> Any:
        batches.append(1)
        return normalize(*args)

    monkeypatch.setattr(ingest_module, "normalize_batch", counted)
    options = {"episodes": (f"{bucket}/cached/a.jsonl",), "cache_dir": tmp_path / "cache"}
    first = build(config_for(tmp_path, "first", **options))
    assert batches
    batches.clear()
    second = build(config_for(tmp_path, "second", **options))
    assert not batches  # replayed from the cache, not normalized again
    assert local_files(first.out) == local_files(second.out)


def test_a_finished_build_is_uploaded_and_only_its_own_stale_files_removed(
    bucket: str, tmp_path: Path
) -> None:
    target = f"{bucket}/releases/ds"
    put(f"{target}/NOTES.txt", b"someone else's object under the same prefix")
    sharded = {"episodes": (str(SAMPLE),), "upload_to": target, "parquet_max_rows_per_file": 40}
    first = build(config_for(tmp_path, "first", **sharded))
    many = {name for name in local_files(first.out) if name.startswith("turns/")}
    assert len(many) > 3 and set(listing(target)) >= set(local_files(first.out))

    second = build(config_for(tmp_path, "second", episodes=(str(SAMPLE),), upload_to=target))
    uploaded = listing(target)
    assert uploaded.pop("NOTES.txt") == b"someone else's object under the same prefix"
    assert uploaded == local_files(second.out)  # the first build's extra shards are gone
    manifest = json.loads(uploaded["manifest.json"])
    assert set(manifest["files"]) <= set(uploaded)


def test_an_upload_sends_only_the_files_that_changed(bucket: str, tmp_path: Path) -> None:
    """A day's file appended: only its segment's files (and the card and manifest) go."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    first_day, second_day = tmp_path / "day-1.jsonl", tmp_path / "day-2.jsonl"
    first_day.write_text("".join(lines[:75]), encoding="utf-8")
    second_day.write_text("".join(lines[75:]), encoding="utf-8")
    target = f"{bucket}/daily/ds"  # below: a segment per day's file, however small
    first = build(
        config_for(tmp_path, "first", episodes=(str(first_day),), upload_to=target, segment_bytes=1)
    )
    assert first.upload == {"sent": len(local_files(first.out)), "unchanged": 0, "deleted": 0}

    again = build(
        config_for(tmp_path, "again", episodes=(str(first_day),), upload_to=target, segment_bytes=1)
    )
    # The data files and the card's images: unchanged, so not sent again.
    data = [name for name in local_files(again.out) if name.endswith((".parquet", ".png"))]
    assert again.upload == {"sent": 2, "unchanged": len(data), "deleted": 0}

    days = (str(first_day), str(second_day))
    # the next version keeps the splits of the one before it, so day 1's files stay as they were
    more = build(
        config_for(
            tmp_path,
            "more",
            episodes=days,
            upload_to=target,
            segment_bytes=1,
            split_previous=str(again.out),
        )
    )
    added = [name for name in local_files(more.out) if "-00002-" in name]
    before, after = local_files(again.out), local_files(more.out)
    redrawn = [n for n in after if n.startswith("images/") and after[n] != before[n]]
    assert redrawn  # the card's charts show the new rows
    sent = len(added) + 2 + len(redrawn)
    assert added and more.upload == {
        "sent": sent,
        "unchanged": len(data) - len(redrawn),
        "deleted": 0,
    }
    assert listing(target) == local_files(more.out)


def test_an_unreachable_store_fails_the_upload_after_a_good_local_build(
    tmp_path: Path, store_out_of_reach: None
) -> None:
    config = config_for(tmp_path, "out", episodes=(str(SAMPLE),), upload_to="s3://x/ds")
    with pytest.raises(UploadFailed, match="s3://x"):
        build(config)
    assert (tmp_path / "out" / "dataset" / "manifest.json").is_file()


def test_a_file_uri_target_gets_its_folders(tmp_path: Path) -> None:
    target = tmp_path / "store" / "releases" / "ds"
    report = build(config_for(tmp_path, "out", episodes=(str(SAMPLE),), upload_to=target.as_uri()))
    assert report.upload is not None and report.upload["sent"] == len(local_files(report.out))
    assert local_files(target) == local_files(report.out)


@pytest.mark.parametrize(
    ("target", "code", "named"),
    [
        ("backup/ds", 1, "--upload-to backup/ds"),  # a plain path: a usage error
        ("ftp://h/ds", 1, "ftp://h/ds"),  # a scheme no store serves: the user's to fix
    ],
)
def test_a_bad_upload_target_is_refused_before_any_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, code: int, named: str
) -> None:
    out = tmp_path / "o"
    argv = ["build", "--episodes", str(SAMPLE), "--out", str(out), "--upload-to", target]
    assert main(argv) == code
    assert named in capsys.readouterr().err
    assert not out.exists()


def test_an_unknown_scheme_is_an_input_error_naming_the_uri(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=re.escape("nosuch://bucket/a.jsonl")):
        expand_inputs(["nosuch://bucket/a.jsonl"])
    code = main(["build", "--episodes", "nosuch://bucket/*.jsonl", "--out", str(tmp_path / "o")])
    assert code == 1


@pytest.mark.parametrize("pattern", ["s3://data/in/*.jsonl", "s3://data/in/a.jsonl"])
def test_an_input_store_out_of_reach_is_the_environments_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], store_out_of_reach: None, pattern: str
) -> None:
    """Nothing answers at the store's endpoint: one line naming the URI, exit 5 (run again
    once the store is back), where a missing file or an unknown scheme is exit 1."""
    code = main(["build", "--episodes", pattern, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 5, err
    assert len(err.strip().splitlines()) == 1 and "s3://data/in/" in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_file_uris_glob_like_local_paths(tmp_path: Path) -> None:
    for rel in ("a.jsonl", "x/b.jsonl", "x/y/c.jsonl", "x/d.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}\n")
    uri = f"file://{tmp_path}"
    assert expand_inputs([f"{uri}/**/*.jsonl"]) == [
        f"{uri}/a.jsonl",
        f"{uri}/x/b.jsonl",
        f"{uri}/x/y/c.jsonl",
    ]
    assert expand_inputs([f"{uri}/x/*.jsonl"]) == [f"{uri}/x/b.jsonl"]
    assert expand_inputs([f"{uri}/x/?.txt"]) == [f"{uri}/x/d.txt"]
    assert expand_inputs([f"{uri}/[ab].jsonl", f"{uri}/x/[!a].jsonl"]) == [
        f"{uri}/a.jsonl",
        f"{uri}/x/b.jsonl",
    ]
    with pytest.raises(InputError, match="no input file matches"):
        expand_inputs([f"{uri}/missing.jsonl"])


def test_a_file_uri_is_known_by_inode_and_ctime_like_a_local_path(tmp_path: Path) -> None:
    # An edit in place that keeps the size and puts the mtime back (``touch -d``, ``rsync
    # -t``) still changes the ctime: the cache sees it for file:// inputs as for paths.
    path = tmp_path / "ep.jsonl"
    path.write_text('{"a": 1}\n')
    before = storage.stat(f"file://{path}")
    assert before == storage.stat(str(path))
    mtime = path.stat().st_mtime_ns
    time.sleep(0.01)
    path.write_text('{"a": 2}\n')
    os.utime(path, ns=(mtime, mtime))
    after = storage.stat(f"file://{path}")
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after != before
