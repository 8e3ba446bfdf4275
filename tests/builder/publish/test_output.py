"""What ``episodes publish`` prints where nobody watches a terminal: its own lines, and none of
the Hub client's progress bars (a CI log or a pipe gets one bar frame per update)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from builder.pipeline import BuildReport
from tests.builder.publish.conftest import WRITE_TOKEN
from tests.hub_server import HubServer

EPISODES = Path(sys.executable).parent / "episodes"


def test_a_publish_into_a_pipe_prints_no_progress_bars(
    hub: HubServer, build_a: BuildReport, repo_id: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    env["HF_TOKEN"] = WRITE_TOKEN
    argv = ["publish", str(build_a.out), "--repo", repo_id, "--version", "1.0.0"]
    proc = subprocess.run(
        [str(EPISODES), *argv], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert f"published {repo_id} v1.0.0" in proc.stdout
    assert "it/s" not in proc.stderr and "%|" not in proc.stderr, proc.stderr
    assert hub.repo(repo_id).tags["v1.0.0"]
