"""Determinism across machines: the same inputs and config give a byte-identical output folder
whatever the thread count, time zone, locale, hash seed, CPU set or location on disk.

Two ``python -m builder build`` subprocesses read copies of the same input folder from two
different places (relative paths, as a config file names them), with different
``POLARS_MAX_THREADS``, ``TZ``, ``LANG``/``LC_ALL``, ``PYTHONHASHSEED`` and CPU affinity.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from builder.cli.episodes import main
from samples.episodes import generate_episodes
from samples.files import write_jsonl
from samples.questions import generate_questions

ROOT = Path(__file__).resolve().parents[2]

MACHINES = {
    "a": {
        "POLARS_MAX_THREADS": "1",
        "TZ": "UTC",
        "LANG": "C",
        "LC_ALL": "C",
        "PYTHONHASHSEED": "1",
    },
    "b": {
        "POLARS_MAX_THREADS": "8",
        "TZ": "Pacific/Kiritimati",  # UTC+14, the far end from UTC
        "LANG": "tr_TR.UTF-8",  # dotted and dotless i: the classic case-mapping trap
        "LC_ALL": "tr_TR.UTF-8",
        "PYTHONHASHSEED": "4242",
    },
}


def folder_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def write_inputs(folder: Path) -> None:
    episodes = list(generate_episodes(400, seed=6))
    write_jsonl(folder / "episodes" / "part-1.jsonl", episodes[:250])
    write_jsonl(folder / "episodes" / "part-2.jsonl.gz", episodes[250:])
    write_jsonl(folder / "questions" / "synthetic.jsonl", generate_questions(40, seed=6))
    write_jsonl(folder / "questions" / "llm.jsonl", generate_questions(15, seed=6, kind="llm"))


def run_build(inputs: Path, out: Path, env: dict[str, str], one_cpu: bool) -> None:
    command = [
        sys.executable,
        "-m",
        "builder",
        "build",
        "--episodes",
        "episodes/*.jsonl*",
        "--synthetic-questions",
        "questions/synthetic.jsonl",
        "--llm-questions",
        "questions/llm.jsonl",
        "--out",
        str(out),
        "--rejects",
        str(out.parent / "rejects.jsonl"),
        "--no-progress",
    ]
    base = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")}

    def pin() -> None:
        if one_cpu:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    result = subprocess.run(
        command,
        cwd=inputs,
        env=base | env,
        capture_output=True,
        text=True,
        preexec_fn=pin,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_same_inputs_build_byte_identical_folders_across_environments(tmp_path: Path) -> None:
    source = tmp_path / "source"
    write_inputs(source)
    outs = {}
    for i, (machine, env) in enumerate(MACHINES.items()):
        home = tmp_path / f"machine-{machine}" / ("deeper/" * i) / "work"
        shutil.copytree(source, home / "inputs")
        out = home / "build" / "dataset"
        run_build(home / "inputs", out, env, one_cpu=i == 0)
        outs[machine] = folder_digest(out)
    a, b = outs.values()
    assert a.keys() == b.keys()
    differing = sorted(name for name in a if a[name] != b[name])
    assert differing == [], f"files that differ between the two builds: {differing}"
    assert any(name.endswith(".parquet") for name in a) and "manifest.json" in a


CONFIG = """
[inputs]
episodes = ["episodes/*.jsonl*"]
synthetic_questions = "questions/synthetic.jsonl"
llm_questions = ["questions/llm.jsonl"]
sessions = "sqlite:///sessions/sample.sql"
"""


def test_a_config_builds_the_same_folder_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The config names its inputs relative to its folder; the dataset names them so too,
    # whether the build runs in that folder or names the config by an absolute path from
    # elsewhere: no checkout's location ends up in a row, the manifest or the card.
    outs = {}
    for name in ("here", "here-by-absolute-path", "elsewhere"):
        checkout = tmp_path / name / "checkout"
        write_inputs(checkout)
        (checkout / "sessions").mkdir()
        shutil.copy(ROOT / "data" / "sessions" / "sample.sql", checkout / "sessions")
        (checkout / "dataset.toml").write_text(CONFIG)
        out = tmp_path / name / "out"
        runner = tmp_path if name == "elsewhere" else checkout
        monkeypatch.chdir(runner)
        config = ["--config", str(checkout / "dataset.toml")] if name != "here" else []
        argv = ["build", *config, "--out", str(out), "--rejects", str(out) + ".rejects"]
        assert main([*argv, "--no-progress"]) == 0
        assert Path.cwd() == runner  # the build ran in the config's folder, and came back
        outs[name] = folder_digest(out)
        manifest = json.loads((out / "manifest.json").read_text())
        assert [i["path"] for i in manifest["inputs"]] == [
            "questions/synthetic.jsonl",
            "questions/llm.jsonl",
            "episodes/part-1.jsonl",
            "episodes/part-2.jsonl.gz",
        ]
        assert manifest["sessions"]["source"] == "sqlite:///sessions/sample.sql"
        files = pl.read_parquet(out / "episodes" / "*.parquet")["source_file"].unique().sort()
        assert files.to_list() == ["episodes/part-1.jsonl", "episodes/part-2.jsonl.gz"]
    assert outs["here"] == outs["here-by-absolute-path"] == outs["elsewhere"]


def test_inputs_outside_the_config_folder_keep_the_names_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_inputs(tmp_path / "inputs")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "dataset.toml").write_text("[splits]\nsalt = 'x'\n")
    monkeypatch.chdir(tmp_path / "inputs")
    out = tmp_path / "out"
    argv = ["build", "--config", "../config/dataset.toml", "--episodes", "episodes/*.jsonl*"]
    assert main([*argv, "--out", str(out), "--rejects", str(tmp_path / "r"), "--no-progress"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == [
        "episodes/part-1.jsonl",
        "episodes/part-2.jsonl.gz",
    ]
