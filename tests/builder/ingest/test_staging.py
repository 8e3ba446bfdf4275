"""How episode files are cut into segments (``builder.ingest.staging.plan_segments``)."""

from __future__ import annotations

from pathlib import Path

from builder.ingest.staging import MIN_SEGMENT_BYTES, plan_segments, segment_threshold


def files(folder: Path, sizes: list[int]) -> list[str]:
    paths = []
    for i, size in enumerate(sizes):
        path = folder / f"{i:02d}.jsonl"
        path.write_bytes(b"x" * size)
        paths.append(str(path))
    return paths


def test_a_run_closes_at_the_file_that_fills_it(tmp_path: Path) -> None:
    a, b, c, d, e, f = files(tmp_path, [3, 3, 3, 10, 6, 1])
    assert plan_segments([a, b, c, d, e, f], 5) == ((a, b), (c, d), (e,), (f,))
    assert plan_segments([a, b, c, d, e, f], 1) == tuple((p,) for p in (a, b, c, d, e, f))


def test_appending_a_file_changes_only_the_open_run(tmp_path: Path) -> None:
    paths = files(tmp_path, [4, 2, 7, 1, 3, 2, 9, 1])
    size = {p: Path(p).stat().st_size for p in paths}
    for n in range(1, len(paths)):
        before, after = plan_segments(paths[:n], 6), plan_segments(paths[: n + 1], 6)
        closed = [run for run in before if sum(size[p] for p in run) >= 6]
        assert list(after[: len(closed)]) == closed
        assert len(before) - len(closed) <= 1  # at most the last run is open


def test_the_automatic_threshold_is_a_power_of_two_that_moves_when_the_input_doubles() -> None:
    assert segment_threshold(0) == MIN_SEGMENT_BYTES
    assert segment_threshold(64 * MIN_SEGMENT_BYTES) == MIN_SEGMENT_BYTES
    assert segment_threshold(64 * MIN_SEGMENT_BYTES + 64) == 2 * MIN_SEGMENT_BYTES
    assert segment_threshold(128 * MIN_SEGMENT_BYTES) == 2 * MIN_SEGMENT_BYTES
    for total in (4 * 10**9, 3 * 10**10, 123_456_789_012):
        threshold = segment_threshold(total)
        assert threshold & (threshold - 1) == 0
        assert total / 64 <= threshold < total / 32


def test_a_missing_file_does_not_stop_the_plan(tmp_path: Path) -> None:
    (a,) = files(tmp_path, [3])
    gone = str(tmp_path / "gone.jsonl")
    assert plan_segments([gone, a], 3) == ((gone, a),)
