"""The build's child Pythons (the workers' fork server) import the build's
own modules, whatever folder the command runs in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.engine.import_path import child_environment, children_import_from_here

ROOT = Path(__file__).resolve().parents[3]
EPISODES = Path(sys.executable).parent / "episodes"

# A package of the build's name that says where it was imported, then refuses.
DECOY = """import os
open(os.path.join({folder!r}, "imported-%d" % os.getpid()), "w").close()
raise ImportError("a decoy, not the build's package")
"""


def test_the_child_environment_is_this_import_path_in_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", "/a", "/b", "/a"])
    env = child_environment({"KEEP": "1", "PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), "/a", "/b"]
    assert env["PYTHONSAFEPATH"] == "1" and env["KEEP"] == "1"


def test_the_environment_is_restored_after_the_children_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/before")
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    with children_import_from_here():
        assert os.environ["PYTHONSAFEPATH"] == "1"
        assert os.environ["PYTHONPATH"] != "/before"
    assert os.environ["PYTHONPATH"] == "/before" and "PYTHONSAFEPATH" not in os.environ


def test_a_build_run_beside_other_builder_and_schemas_packages_imports_none_of_them(
    tmp_path: Path,
) -> None:
    """Workers (a pool: ``--workers 2``) would each import a
    ``builder``/``schemas`` found in the command's folder before the build's own."""
    for package in ("builder", "schemas"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(DECOY.format(folder=str(tmp_path)))
    episodes = ROOT / "data" / "episodes" / "episodes.jsonl"
    out = tmp_path / "out"
    argv = ["build", "--no-progress", "--workers", "2", "--episodes", str(episodes)]
    argv += ["--out", str(out / "ds"), "--rejects", str(out / "rejects.jsonl")]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    proc = subprocess.run(
        [str(EPISODES), *argv], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.glob("imported-*")) == []
    assert (out / "ds" / "images" / "lengths.png").is_file()
