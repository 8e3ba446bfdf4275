"""Every benchmark ``make bench`` runs still runs: each one end to end at a toy size. They
time nothing here (speed is measured by ``make bench``, not by tests); they check that the
entry points, their child processes and their reports work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_alternate, bench_build, bench_incremental, bench_sessions
from builder.sessions.pgcluster import find_bindir


def test_build_benchmark_reports_every_scale(tmp_path: Path) -> None:
    rows = bench_build.main(["--base", "4", "--scales", "1,2", "--work", str(tmp_path)])
    assert [r["episodes"] for r in rows] == [4, 8]
    for row in rows:
        assert row["build_s"] > 0 and row["floor_s"] > 0 and row["peak_rss_mib"] > 0
        assert row["build_over_floor"] > 0 and row["ingest_s"] > 0 and row["cpu_s"] > 0
        assert 0 < row["write_floor_s"] < row["build_s"]
        # the peer measured in the same run, and the goal's ratio against it
        assert row["load_dataset_s"] > 0
        assert row["build_over_load_dataset"] == round(row["build_s"] / row["load_dataset_s"], 2)
    stages = json.loads((tmp_path / "build.json").read_text())["stages"]
    assert stages["write Parquet"] > 0
    # every stage the table names is timed where its code now lives
    for stage in ("parse (typed decode)", "normalize (rows)", "normalize (Arrow tables)"):
        assert stages[stage] > 0, stage
    # the CPU of the writing threads, measured beside their thread-seconds
    assert 0 < stages["write Parquet CPU"] <= stages["write Parquet"] * 1.05


def test_incremental_benchmark_checks_its_output_against_a_clean_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = bench_incremental.main(["--base", "30", "--files", "3", "--work", str(tmp_path)])
    assert len(rows) == 5 and all(r["build_s"] > 0 for r in rows.values())
    out = capsys.readouterr().out
    assert "dataset byte-identical to a clean build: True" in out
    assert "rejects byte-identical: True" in out


@pytest.mark.skipif(find_bindir() is None, reason="PostgreSQL server binaries not installed")
def test_sessions_benchmark_reports_every_mode(capsys: pytest.CaptureFixture[str]) -> None:
    bench_sessions.main(["--actions", "400", "--actions-per-session", "10"])
    out = capsys.readouterr().out
    for mode in bench_sessions.MODES:
        assert mode in out


def test_alternating_benchmark_runs_both_checkouts_in_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both sides are this checkout here: the runs alternate and the outputs compare equal."""
    root = str(Path(__file__).resolve().parents[2])
    argv = ["--before", root, "--after", root, "--base", "4", "--rounds", "2"]
    runs = bench_alternate.main([*argv, "--work", str(tmp_path)])
    assert [len(runs["before"]), len(runs["after"])] == [2, 2]
    assert all(r["cpu_s"] > 0 and r["wall_s"] > 0 for side in runs.values() for r in side)
    out = capsys.readouterr().out
    assert [
        line.split(" | ")[1]
        for line in out.splitlines()
        if line.startswith("| ") and "which" not in line
    ] == ["before", "after", "before", "after"]
    assert "outputs: identical" in out


def test_alternating_benchmark_names_the_files_that_differ(tmp_path: Path) -> None:
    left, right = tmp_path / "a", tmp_path / "b"
    for folder, text in ((left, "x"), (right, "y")):
        (folder / "c").mkdir(parents=True)
        (folder / "c" / "same").write_text("same")
        (folder / "c" / "changed").write_text(text)
    (left / "only-left").write_text("")
    assert bench_alternate.differing(left, right) == ["c/changed", "only-left"]
