"""A release on the Hub is a canonical source: ``export-jsonl org/name@vX.Y.Z`` gives back
its episodes, and ``build --from org/name@vX.Y.Z`` makes every config's Parquet files again,
byte for byte, without the JSONL it was built from."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from builder.cli.build_from import restored_build
from builder.cli.episodes import main
from builder.config import BuildConfig
from builder.pipeline import BuildReport, build
from builder.restore.episodes import episode_lines
from schemas.lines import same
from tests.builder.publish.helpers import run_publish
from tests.hub_server import HubServer


def parquet_digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*.parquet")
    }


@pytest.fixture(scope="module")
def release(hub: HubServer, build_a: BuildReport, tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.builder.publish.conftest import WRITE_TOKEN

    mp = pytest.MonkeyPatch()
    mp.setenv("HF_TOKEN", WRITE_TOKEN)
    folder = tmp_path_factory.mktemp("to-release") / "dataset"
    shutil.copytree(build_a.out, folder)
    repo_id = "org/from-release"
    code, _, err = run_publish(folder, "--repo", repo_id, "--version", "1.0.0", "--no-progress")
    mp.undo()
    assert code == 0, err
    return f"{repo_id}@v1.0.0"


def test_export_jsonl_reads_a_release(release: str, build_a: BuildReport, tmp_path: Path) -> None:
    out = tmp_path / "episodes.jsonl"
    assert main(["export-jsonl", release, "--out", str(out)]) == 0
    back = [json.loads(line) for line in out.read_text().splitlines()]
    local = list(episode_lines(build_a.out))
    assert len(back) == len(local) > 0
    assert all(same(a, b) for a, b in zip(back, local, strict=True))


def test_build_from_a_release_equals_the_build_from_the_jsonl(
    release: str, build_a: BuildReport, tmp_path: Path
) -> None:
    config = BuildConfig(out=tmp_path / "dataset", rejects=tmp_path / "r.jsonl")
    with restored_build(config, release) as restored:
        again = build(restored)
    assert parquet_digests(again.out) == parquet_digests(build_a.out)
    made = again.manifest["built_from"]
    assert made["source"] == release and made["release"] == "1.0.0"


def test_a_bare_version_names_the_release_tag(
    release: str, build_a: BuildReport, tmp_path: Path
) -> None:
    """``publish --version 1.0.0`` tags ``v1.0.0``; ``@1.0.0`` reads that release too."""
    bare = release.replace("@v", "@")
    out = tmp_path / "episodes.jsonl"
    assert main(["export-jsonl", bare, "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(list(episode_lines(build_a.out)))


def test_a_release_that_is_not_there_is_one_line(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for spec in ("org/nothing-here@v9.9.9", "org/nothing-here@9.9.9"):
        assert main(["export-jsonl", spec, "--out", str(tmp_path / "x")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot read that release from the Hub" in err[0]


def test_a_release_whose_cached_copy_changed_names_the_release_and_the_cache(
    release: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of the release's copy in the Hub's cache edited after the download: the
    release is named (not the cache's folder) and the advice is to drop that copy."""
    from builder.fs.releases import download_release
    from builder.restore.folder import EPISODE_TABLES

    folder = download_release(release, EPISODE_TABLES)
    victim = sorted((folder / "turns").glob("*.parquet"))[0].resolve()  # the cache's blob
    kept = victim.read_bytes()
    try:
        victim.write_bytes(kept[:-7])
        assert main(["export-jsonl", release, "--out", str(tmp_path / "x.jsonl")]) == 1
    finally:
        victim.write_bytes(kept)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"episodes export-jsonl: {release}: turns/"), err[0]
    assert "hf cache rm dataset/org/from-release" in err[0] and str(folder) not in err[0]
