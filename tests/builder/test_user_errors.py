"""Each user mistake: the installed ``episodes`` command exits with its code and one line."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

EPISODES = Path(sys.executable).parent / "episodes"


def _cases(tmp: Path) -> list[tuple[str, list[str], int, str]]:
    (tmp / "empty.jsonl").write_bytes(b"")
    (tmp / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    (tmp / "notgz.jsonl.gz").write_bytes(b"not gzip at all\n")
    (tmp / "trunc.jsonl.gz").write_bytes(gzip.compress(b'{"a": 1}\n' * 100)[:30])
    (tmp / "folder.jsonl").mkdir()
    out = ["--out", str(tmp / "out"), "--rejects", str(tmp / "rejects.jsonl"), "--no-progress"]
    return [
        ("sqlite missing", ["build", "--sessions", "sqlite:///nope.db", *out], 1, "nope.db"),
        ("pg down", ["build", "--sessions", "postgresql://u@127.0.0.1:1/db", *out], 1, "127.0.0.1"),
        ("negative workers", ["build", "--workers", "-3", *out], 1, "--workers"),
        ("ratio over 1", ["build", "--max-reject-ratio", "2", *out], 1, "--max-reject-ratio"),
        ("upload not uri", ["build", "--upload-to", "bucket", *out], 1, "--upload-to"),
        ("no glob match", ["build", "--episodes", str(tmp / "none*.jsonl"), *out], 1, "none"),
        ("missing config", ["build", "--config", str(tmp / "no.toml"), *out], 1, "no.toml"),
        ("sessions init bad url", ["sessions", "init", "mysql://x"], 1, "mysql"),
        ("bad version", ["publish", str(tmp / "out"), "--repo", "a/b", "--version", "x"], 1, "x"),
    ]


@pytest.mark.parametrize("index", range(9))
def test_bad_invocation_is_one_line(tmp_path: Path, index: int) -> None:
    name, argv, code, needle = _cases(tmp_path)[index]
    proc = subprocess.run(
        [str(EPISODES), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == code, (name, proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, name
    assert len(lines) == 1, (name, proc.stderr)
    assert needle in lines[0], (name, lines[0])
    assert not (tmp_path / "out").exists(), name
