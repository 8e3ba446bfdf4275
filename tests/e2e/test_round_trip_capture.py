"""The round trip on the capture project's own files (thajpo/csv-agent): every episode line
of its fixtures and episode files that the builder accepts, built beside its question banks,
comes back from ``export-jsonl`` as the same JSON value.

Its files carry no licence to copy them here, so the test reads a checkout of that project
named by ``CAPTURE_DATA`` (every ``*.jsonl`` under it is read as episodes, every
``questions.json`` as a bank); without one it says so and is skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from tests.e2e.test_round_trip import assert_round_trip

ROOT = os.environ.get("CAPTURE_DATA", "")


@pytest.mark.skipif(not ROOT, reason="set CAPTURE_DATA to a checkout of thajpo/csv-agent")
def test_every_accepted_capture_line_comes_back(tmp_path: Path) -> None:
    root = Path(ROOT)
    episodes = sorted(str(p) for p in root.rglob("*.jsonl"))
    banks = sorted(str(p) for p in root.rglob("questions.json"))
    config = BuildConfig(
        episodes=tuple(episodes),
        llm_questions=tuple(banks),
        out=tmp_path / "ds",
        rejects=tmp_path / "rejects.jsonl",
        max_reject_ratio=1.0,
    )
    build(config)
    lines, seen = [], set()
    for path in episodes:
        for text in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("episode_id") not in seen:
                lines.append(line)
                seen.add(line.get("episode_id"))
    kept = {line["episode_id"] for line in _exported(tmp_path / "ds")}
    accepted = [line for line in lines if line.get("episode_id") in kept]
    n = assert_round_trip(tmp_path / "ds", accepted, config.hook_value_limit)
    print(f"{n} capture lines round-tripped")  # the count, under pytest -s
    assert n == len(kept) > 0


def _exported(folder: Path) -> list[dict]:
    from builder.restore.episodes import episode_lines

    return list(episode_lines(folder))
