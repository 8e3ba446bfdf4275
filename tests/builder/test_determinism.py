"""Determinism across machines: the same inputs and config give a byte-identical output folder
whatever the thread count, time zone, locale, hash seed, CPU set or location on disk.

Two ``python -m builder build`` subprocesses read copies of the same input folder from two
different places (relative paths, as a config file names them), with different
``POLARS_MAX_THREADS``, ``TZ``, ``LANG``/``LC_ALL``, ``PYTHONHASHSEED`` and CPU affinity.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

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
