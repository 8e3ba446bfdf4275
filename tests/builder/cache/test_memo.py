"""The stat memo (``builder.cache.memo``): when an input's digest is trusted without reading
it, when the input is hashed first, and when it is a certain miss."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from builder.cache import keys, memo
from builder.cache.memo import StatMemo
from builder.fs import storage

OLD_NS = 1_600_000_000 * 10**9  # an mtime in 2020


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled once written: a file's ctime is the moment it was written
    (``utime`` cannot move it back), so without this every file these tests write would be
    inside the 2 s racy window when recorded."""
    monkeypatch.setattr(memo, "RACY_NS", 0)


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``keys.file_sha256`` reads."""
    seen: list[str] = []
    original = keys.file_sha256

    def spy(path: str) -> str:
        seen.append(path)
        return original(path)

    monkeypatch.setattr(keys, "file_sha256", spy)
    return seen


def old_file(path: Path, content: bytes) -> str:
    path.write_bytes(content)
    os.utime(path, ns=(OLD_NS, OLD_NS))
    time.sleep(0.002)  # a record made from now on is strictly later than the ctime
    return str(path)


def recorded(tmp_path: Path, path: str, verify: bool = False) -> StatMemo:
    """A memo that recorded ``path`` (as read by an earlier build), saved and loaded again."""
    first = StatMemo(tmp_path / "index.json", verify)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    first.remember(path, storage.stat(path), digest, time.time_ns())
    first.save()
    return StatMemo(tmp_path / "index.json", verify)


@pytest.mark.usefixtures("settled")
def test_an_unchanged_file_is_trusted_without_being_read(tmp_path: Path, hashed: list[str]):
    path = old_file(tmp_path / "a.jsonl", b'{"a": 1}\n')
    digest, trusted = recorded(tmp_path, path).known_digest(path, storage.stat(path))
    assert (digest, trusted) == (hashlib.sha256(b'{"a": 1}\n').hexdigest(), True)
    assert hashed == []


def test_a_file_racy_when_recorded_is_hashed(tmp_path: Path, hashed: list[str]) -> None:
    path = old_file(tmp_path / "a.jsonl", b'{"a": 1}\n')  # ctime: within RACY_NS of the record
    digest, trusted = recorded(tmp_path, path).known_digest(path, storage.stat(path))
    assert trusted is False
    assert digest == hashlib.sha256(b'{"a": 1}\n').hexdigest()
    assert hashed == [path]


def test_a_file_of_another_size_is_a_certain_miss(tmp_path: Path, hashed: list[str]) -> None:
    path = old_file(tmp_path / "a.jsonl", b'{"a": 1}\n')
    loaded = recorded(tmp_path, path)
    old_file(tmp_path / "a.jsonl", b'{"a": 1}\n{"b": 2}\n')
    assert loaded.known_digest(path, storage.stat(path)) == (None, False)
    assert hashed == []  # no read: no entry can match another size


@pytest.mark.usefixtures("settled")
def test_same_size_other_content_is_hashed(tmp_path: Path, hashed: list[str]) -> None:
    path = old_file(tmp_path / "a.jsonl", b'{"a": 1}\n')
    loaded = recorded(tmp_path, path)
    old_file(tmp_path / "a.jsonl", b'{"a": 2}\n')  # same size and mtime; another ctime
    digest, trusted = loaded.known_digest(path, storage.stat(path))
    assert (digest, trusted) == (hashlib.sha256(b'{"a": 2}\n').hexdigest(), False)
    assert hashed == [path]


@pytest.mark.usefixtures("settled")
def test_cache_verify_hashes_even_a_trusted_file(tmp_path: Path, hashed: list[str]) -> None:
    path = old_file(tmp_path / "a.jsonl", b'{"a": 1}\n')
    digest, trusted = recorded(tmp_path, path, verify=True).known_digest(path, storage.stat(path))
    assert trusted is False and digest is not None
    assert hashed == [path]


def test_a_file_changed_while_read_is_not_recorded(tmp_path: Path) -> None:
    path = old_file(tmp_path / "a.jsonl", b'{"a": 1}\n')
    before = storage.stat(path)
    old_file(tmp_path / "a.jsonl", b'{"a": 1}\n{"b": 2}\n')  # written during the read
    memo_ = StatMemo(tmp_path / "index.json", verify=False)
    memo_.remember(path, before, "0" * 64, time.time_ns())
    assert memo_.records == {}


@pytest.mark.parametrize(
    "index",
    ['{"format": 99, "files": {}}', "not json", '{"format": 1, "files": []}', "[]"],
)
def test_an_unreadable_or_foreign_index_is_an_empty_memo(tmp_path: Path, index: str) -> None:
    path = old_file(tmp_path / "a.jsonl", b'{"a": 1}\n')
    (tmp_path / "index.json").write_text(index)
    assert StatMemo(tmp_path / "index.json", False).known_digest(path, storage.stat(path)) == (
        None,
        False,
    )


def test_save_keeps_only_what_this_build_recorded_or_kept(tmp_path: Path) -> None:
    a = old_file(tmp_path / "a.jsonl", b"a\n")
    b = old_file(tmp_path / "b.jsonl", b"b\n")
    first = StatMemo(tmp_path / "index.json", False)
    for path in (a, b):
        first.remember(path, storage.stat(path), "0" * 64, time.time_ns())
    first.save()
    second = StatMemo(tmp_path / "index.json", False)
    second.keep(a)  # b was not part of this build
    second.save()
    files = json.loads((tmp_path / "index.json").read_text())["files"]
    assert list(files) == [a]
    assert not list(tmp_path.glob(".index.json.*"))  # the temporary file was renamed
