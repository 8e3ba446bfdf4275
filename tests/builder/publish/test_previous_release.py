"""A build keeps the split assignment of a release on the Hub: ``--previous org/name@vX.Y.Z``
reads the release's manifest and splits files at that tag."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from builder.config import BuildConfig
from builder.derive.splits.previous import PreviousUnreadable
from builder.pipeline import BuildReport, build
from tests.builder.publish.helpers import run_publish
from tests.hub_server import HubServer


def splits_of(folder: Path) -> pl.DataFrame:
    return pl.read_parquet(sorted((folder / "splits").glob("*.parquet"))).select(
        "question_id", "split"
    )


def test_a_build_keeps_the_splits_of_a_release(
    hub: HubServer,
    hf_token: str,
    repo_id: str,
    build_a: BuildReport,
    build_b: BuildReport,
    copy_build,
    tmp_path: Path,
) -> None:
    released = copy_build(build_a, "release")
    code, _, err = run_publish(released, "--repo", repo_id, "--version", "1.0.0")
    assert code == 0, err
    inputs = [report.out.parent / "episodes.jsonl" for report in (build_a, build_b)]
    config = BuildConfig(
        episodes=tuple(str(p) for p in inputs),
        out=tmp_path / "next",
        rejects=tmp_path / "rejects.jsonl",
        split_previous=f"{repo_id}@v1.0.0",
        split_salt="another salt",
        max_reject_ratio=1.0,  # the two files share episodes: duplicates are rejected
    )
    # made under other split settings, the release pins its held-out questions only, and the
    # manifest says why
    other = build(config).manifest["splits"]["previous"]
    held = splits_of(build_a.out).filter(pl.col("split") != "train").height
    assert other == {
        "source": f"{repo_id}@v1.0.0",
        "followed": False,
        "differs": ["salt"],
        "held_out": held,
    }
    report = build(replace(config, split_salt=build_a.manifest["splits"]["salt"]))
    previous = report.manifest["splits"]["previous"]
    assert previous["source"] == f"{repo_id}@v1.0.0" and previous["followed"] is True
    before = splits_of(build_a.out)
    after = splits_of(tmp_path / "next")
    kept = before.join(after.rename({"split": "now"}), on="question_id")
    assert kept.height == before.height
    assert kept.filter(pl.col("split") != pl.col("now")).height == 0


def test_a_release_that_does_not_exist_is_one_line(hub: HubServer, tmp_path: Path) -> None:
    from builder.derive.splits import SplitConfig
    from builder.derive.splits.assign import SplitPolicy
    from builder.derive.splits.previous import read_previous

    with pytest.raises(PreviousUnreadable) as raised:
        read_previous(
            "org/no-such-dataset@v1.0.0",
            tmp_path,
            SplitPolicy("near_duplicate", 0.5, SplitConfig()),
        )
    message = str(raised.value)
    assert message.startswith("--previous org/no-such-dataset@v1.0.0: cannot read that release")
    assert "\n" not in message
