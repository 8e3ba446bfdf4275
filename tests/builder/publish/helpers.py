"""Shared helpers of the publish tests: run the command, read what the Hub stores."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from builder.publish import cli
from tests.hub_server import HubServer

WRITES = {"PUT", "DELETE", "PATCH"}
READ_POSTS = ("/paths-info/",)


def run_publish(*argv: object) -> tuple[int, str, str]:
    """``episodes publish ARGV``, wired the way ``builder.cli`` wires it: (code, out, err)."""
    parser = argparse.ArgumentParser(prog="episodes")
    cli.add_parser(parser.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(parser.parse_args(["publish", *map(str, argv)]))
    return code, out.getvalue(), err.getvalue()


def writes(hub: HubServer, since: int = 0) -> list[str]:
    """Requests that could change anything (everything but reads), as ``METHOD path``."""
    return [
        f"{r.method} {r.path}"
        for r in hub.requests[since:]
        if r.method in WRITES or (r.method == "POST" and not any(p in r.path for p in READ_POSTS))
    ]


def snapshot(hub: HubServer, repo_id: str) -> dict[str, Any]:
    repo = hub.repo(repo_id)
    return {
        "branches": dict(repo.branches),
        "tags": {k: t.target for k, t in repo.tags.items()},
        "commits": set(repo.commits),
    }


def repo_text(hub: HubServer, repo_id: str, revision: str, path: str) -> str:
    repo = hub.repo(repo_id)
    commit = repo.resolve(revision)
    return repo.content(commit.files[path]).decode()


def build_rows(folder: Path, config: str) -> dict[str, list[dict]]:
    """Rows of a config in a build folder, per split, in file order."""
    rows: dict[str, list[dict]] = {}
    for path in sorted((folder / config).glob("*.parquet")):
        split = path.name.split("-")[0]
        rows.setdefault(split, []).extend(pq.read_table(path).to_pylist())
    return rows


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
