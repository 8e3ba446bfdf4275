"""Git object ids as the Hub computes them: blobs, LFS pointers, trees and commits.

Commit and tree ids are real git ids over the files of a commit, so two commits of the same
files with the same message, parent and time have the same id, like on the Hub.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"


def git_hash(kind: str, data: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data).hexdigest()


def blob_oid(data: bytes) -> str:
    """What ``huggingface_hub.utils.sha.git_hash`` computes for a regular file."""
    return git_hash("blob", data)


def lfs_pointer(sha256: str, size: int) -> bytes:
    return LFS_POINTER.format(oid=sha256, size=size).encode()


@dataclass(frozen=True)
class Entry:
    """A file of a commit: regular (content in the blob store) or LFS (pointer in git)."""

    oid: str  # git blob id (of the content, or of the LFS pointer)
    size: int  # size of the content, not of the pointer
    sha256: str | None = None  # LFS object id; None for a regular file

    @property
    def pointer_size(self) -> int:
        return len(lfs_pointer(self.sha256 or "", self.size)) if self.sha256 else 0


def tree_oids(files: Mapping[str, Entry]) -> dict[str, str]:
    """Git tree id of every directory ("" is the root) of a flat ``path -> Entry`` map."""
    children: dict[str, dict[str, tuple[str, str]]] = {"": {}}
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            children.setdefault("/".join(parts[:depth]), {})
    for path, entry in files.items():
        parent, _, name = path.rpartition("/")
        children[parent][name] = ("100644", entry.oid)
    oids: dict[str, str] = {}
    for directory in sorted(children, key=lambda d: d.count("/") if d else -1, reverse=True):
        entries = children[directory]
        body = b"".join(
            f"{mode} {name}\0".encode() + bytes.fromhex(oid)
            for name, (mode, oid) in sorted(
                entries.items(), key=lambda item: item[0] + ("/" if item[1][0] == "40000" else "")
            )
        )
        oids[directory] = git_hash("tree", body)
        if directory:
            parent, _, name = directory.rpartition("/")
            children[parent][name] = ("40000", oids[directory])
    return oids


def commit_oid(tree: str, parents: Iterable[str], author: str, timestamp: int, message: str) -> str:
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
    signature = f"{author} <{author}@users.noreply.huggingface.co> {timestamp} +0000"
    lines += [f"author {signature}", f"committer {signature}", "", message]
    return git_hash("commit", ("\n".join(lines) + "\n").encode())
