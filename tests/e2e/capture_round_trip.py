"""The round trip on the capture project's own files (thajpo/csv-agent), run by hand:
every episode line of its fixtures and episode files that the builder accepts, built beside
its question banks, comes back from ``export-jsonl`` as the same JSON value.

Its files carry no licence to copy them here, so this is not part of the suite (which runs
the same assertion on generated lines, ``test_round_trip.py``): it reads a checkout of that
project, every ``*.jsonl`` under it as episodes and every ``questions.json`` as a bank.

    python -m tests.e2e.capture_round_trip CHECKOUT
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from builder.config import BuildConfig
from builder.pipeline import build
from builder.restore.episodes import episode_lines
from tests.e2e.test_round_trip import assert_round_trip


def round_trip(root: Path, work: Path) -> int:
    """How many accepted capture lines came back as the same JSON value (an assertion
    fails on the first that does not)."""
    episodes = sorted(str(p) for p in root.rglob("*.jsonl"))
    banks = sorted(str(p) for p in root.rglob("questions.json"))
    config = BuildConfig(
        episodes=tuple(episodes),
        llm_questions=tuple(banks),
        out=work / "ds",
        rejects=work / "rejects.jsonl",
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
    kept = {line["episode_id"] for line in episode_lines(work / "ds")}
    accepted = [line for line in lines if line.get("episode_id") in kept]
    n = assert_round_trip(work / "ds", accepted, config.hook_value_limit)
    assert n == len(kept) > 0, (n, len(kept))
    return n


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as work:
        found = round_trip(Path(sys.argv[1]), Path(work))
    print(f"{found} capture lines round-tripped")
