"""A line with a key twice fails ``duplicate_json_key`` and never trains. Its rows keep each
key once, so the line given back (``export-jsonl``, ``build --from``) has a key twice again:
rebuilt, the episode fails the check again, and still does not train."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from builder.cli.episodes import main

ROOT = Path(__file__).resolve().parents[3]


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*.parquet")
    }


def _checks(folder: Path, table: str) -> list[list[str]]:
    import polars as pl

    frame = pl.read_parquet(folder / table / "*.parquet").sort("source_line")
    return frame.get_column("checks").to_list()


def test_a_repeated_key_is_repeated_again_in_the_lines_given_back(tmp_path: Path) -> None:
    lines = (ROOT / "data" / "episodes" / "episodes.jsonl").read_text().splitlines()[:3]
    lines[0] = lines[0].replace('{"episode_id"', '{"x_dup":1,"x_dup":2,"episode_id"', 1)
    lines[1] = lines[1].replace('"question":{', '"question":{"n_steps":9,', 1)
    source = tmp_path / "episodes.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first, again = tmp_path / "a" / "ds", tmp_path / "b" / "ds"
    argv = ["build", "--config", "/dev/null", "--no-progress", "--max-reject-ratio", "1"]
    assert main([*argv, "--episodes", str(source), "--out", str(first)]) == 0
    assert ["duplicate_json_key" in c for c in _checks(first, "episodes")] == [True, True, False]
    assert main([*argv, "--from", str(first), "--out", str(again)]) == 0
    assert _digests(again) == _digests(first)
    exported = tmp_path / "back.jsonl"
    assert main(["export-jsonl", str(first), "--out", str(exported)]) == 0
    back = exported.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in back] == [json.loads(line) for line in lines]
    assert back[0].count('"episode_id": ') == 2 and back[2].count('"episode_id": ') == 1
    assert back[1].count('"episode_id": ') == 2  # the line's first key, written twice
