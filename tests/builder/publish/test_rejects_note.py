"""``publish`` (a dry run too) names the rejects file the manifest records, or says in one
line that it was moved or changed since the build: it is not uploaded, so it stays where
the build wrote it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from samples.episodes import generate_episodes
from samples.files import write_jsonl
from tests.builder.publish.helpers import run_publish
from tests.hub_server import HubServer


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rejects-note")
    source = root / "episodes.jsonl"
    write_jsonl(source, generate_episodes(12, 5))
    with source.open("a") as handle:
        handle.write("{not json\n")
    config = BuildConfig(
        episodes=(str(source),),
        out=root / "ds",
        rejects=root / "kept" / "odd name.jsonl",
        max_reject_ratio=0.5,
    )
    build(config)
    return root


def dry_run(folder: Path, repo_id: str) -> str:
    code, out, err = run_publish(folder, "--repo", repo_id, "--version", "1.0.0", "--dry-run")
    assert code == 0, err
    return out


def test_a_dry_run_names_the_rejects_file(hub: HubServer, built: Path, repo_id: str) -> None:
    out = dry_run(built / "ds", repo_id)
    where = built / "kept" / "odd name.jsonl"
    assert f"rejects file: {where} (1 rejects, as the build wrote it)" in out


def test_a_moved_or_changed_rejects_file_is_named(
    hub: HubServer, built: Path, repo_id: str, tmp_path: Path
) -> None:
    moved = tmp_path / "elsewhere" / "ds"
    shutil.copytree(built / "ds", moved)
    notes = [line for line in dry_run(moved, repo_id).splitlines() if "rejects file" in line]
    assert len(notes) == 1 and "is not there (moved or deleted?)" in notes[0]
    (tmp_path / "elsewhere" / "kept").mkdir()
    changed = tmp_path / "elsewhere" / "kept" / "odd name.jsonl"
    changed.write_bytes((built / "kept" / "odd name.jsonl").read_bytes() + b"\n")
    notes = [line for line in dry_run(moved, repo_id).splitlines() if "rejects file" in line]
    assert len(notes) == 1 and "changed since the build" in notes[0]
