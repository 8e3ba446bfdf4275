"""Each user mistake: the installed ``episodes`` command exits with its code and one line,
leaves the previous build as it was and leaves nothing new beside it."""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from builder import errors as exit_codes
from builder.cli import episodes as cli

EPISODES = Path(sys.executable).parent / "episodes"
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "episodes" / "episodes.jsonl"


def _cases(tmp: Path) -> list[tuple[str, list[str], int, str]]:
    (tmp / "empty.jsonl").write_bytes(b"")
    (tmp / "array.jsonl").write_text('[{"episode_id": "e"}]\n')
    flagged = json.loads(SAMPLE.read_text(encoding="utf-8").splitlines()[0])
    flagged["question"]["id"] = "f" * 16  # question_id_mismatch: a reject under --strict
    (tmp / "flagged.jsonl").write_text(json.dumps(flagged) + "\n")
    (tmp / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    (tmp / "notgz.jsonl.gz").write_bytes(b"not gzip at all\n")
    (tmp / "trunc.jsonl.gz").write_bytes(gzip.compress(b'{"a": 1}\n' * 100)[:30])
    (tmp / "folder.jsonl").mkdir()
    (tmp / "holder").mkdir()
    (tmp / "holder" / "e.jsonl").write_bytes(SAMPLE.read_bytes())
    (tmp / "type.toml").write_text('[checks]\nmax_reject_ratio = "x"\n')
    (tmp / "key.toml").write_text("[checks]\nstrictt = true\n")
    (tmp / "section.toml").write_text("[chekcs]\nstrict = true\n")
    (tmp / "splits.toml").write_text("[splits]\ntrain = 0.5\nvalidation = 0.1\ntest = 0.1\n")
    (tmp / "pattern.toml").write_text('[redaction.extra_patterns]\nkind = "("\n')
    (tmp / "default.toml").write_text('[card]\ndefault_config = "stf"\n')
    (tmp / "size.toml").write_text('[card]\nsize_category = "huge"\n')
    sample = str(SAMPLE)
    out = ["--out", str(tmp / "out"), "--rejects", str(tmp / "rejects.jsonl"), "--no-progress"]
    return [
        ("sqlite missing", ["build", "--sessions", "sqlite:///nope.db", *out], 1, "nope.db"),
        ("pg down", ["build", "--sessions", "postgresql://u@127.0.0.1:1/db", *out], 5, "127.0.0.1"),
        ("negative workers", ["build", "--workers", "-3", *out], 1, "--workers"),
        ("ratio over 1", ["build", "--max-reject-ratio", "2", *out], 1, "--max-reject-ratio"),
        ("upload not uri", ["build", "--upload-to", "bucket", *out], 1, "--upload-to"),
        ("no glob match", ["build", "--episodes", str(tmp / "none*.jsonl"), *out], 1, "none"),
        ("missing config", ["build", "--config", str(tmp / "no.toml"), *out], 1, "no.toml"),
        ("sessions init bad url", ["sessions", "init", "mysql://x"], 1, "mysql"),
        ("bad version", ["publish", str(tmp / "out"), "--repo", "a/b", "--version", "x"], 1, "x"),
        ("folder as a file", ["build", "--episodes", "folder.jsonl", *out], 1, "is a folder"),
        ("binary input", ["build", "--episodes", "binary.jsonl", *out], 2, "left intact"),
        ("not gzip", ["build", "--episodes", "notgz.jsonl.gz", *out], 1, "Not a gzipped"),
        ("truncated gzip", ["build", "--episodes", "trunc.jsonl.gz", *out], 1, "truncated"),
        (
            "missing bank",
            ["build", "--episodes", sample, "--synthetic-questions", "qs.jsonl", *out],
            1,
            "qs.jsonl",
        ),
        ("wrong type", ["build", "--config", "type.toml", *out], 1, "must be a number, not 'x'"),
        ("unknown key", ["build", "--config", "key.toml", *out], 1, "did you mean 'strict'?"),
        (
            "unknown section",
            ["build", "--config", "section.toml", *out],
            1,
            "did you mean 'checks'",
        ),
        (
            "publish missing folder",
            ["publish", "nothere", "--repo", "a/b", "--version", "1.0.0"],
            2,
            "build it first",
        ),
        (
            "publish unbuilt folder",
            ["publish", "folder.jsonl", "--repo", "a/b", "--version", "1.0.0"],
            2,
            "no manifest.json",
        ),
        ("bad hash precision", ["build", "--hash-precision", "two", *out], 1, "--hash-precision"),
        (
            "unknown flag",
            ["build", "--bogus", *out],
            1,
            "episodes build: unrecognized arguments: --bogus",
        ),
        (
            "input files without a flag",
            ["build", "episodes.jsonl", *out],
            1,
            "input files go after a flag: --episodes episodes.jsonl",
        ),
        (
            "a value after a misspelt flag is not called a file",
            ["build", "--workerz", "3", *out],
            1,
            "unrecognized arguments: --workerz 3 — see",
        ),
        (
            "no subcommand",
            ["sessions"],
            1,
            "episodes sessions: the following arguments are required: COMMAND",
        ),
        ("unknown command", ["bulid"], 1, "bulid"),
        ("schema into a missing folder", ["schema", "--out", "nodir/x.json"], 5, "nodir"),
        ("unwritable output", ["build", "--episodes", sample, "--out", "/proc/x/ds"], 5, "/proc/x"),
        (
            "output holds the input",
            ["build", "--episodes", "holder/e.jsonl", "--out", "holder", "--no-progress"],
            5,
            "holds the input",
        ),
        ("validate missing file", ["validate", "missing.jsonl"], 1, "missing.jsonl"),
        ("unknown store", ["build", "--episodes", "ftp://h/e.jsonl", *out], 1, "use s3://"),
        (
            "ray address alone",
            ["build", "--episodes", sample, "--ray-address", "ray://h:10001", *out],
            1,
            "--engine ray",
        ),
        ("an array as a line", ["validate", "array.jsonl"], 2, "write one record per line"),
        (
            "refused by --strict",
            ["build", "--strict", "--episodes", "flagged.jsonl", *out],
            3,
            "1 of them by --strict (integrity checks failed)",
        ),
        ("lock held", ["build", "--episodes", sample, *out], 4, "another build"),
        (
            "unwritable rejects file",
            ["build", "--episodes", sample, "--rejects", "/proc/x/r.jsonl", "--out", "out"],
            5,
            "--rejects",
        ),
        (
            "unwritable cache",
            ["build", "--episodes", sample, "--cache-dir", "/proc/x/c", *out],
            5,
            "--cache-dir",
        ),
        (
            "file in the way of the output",
            ["build", "--episodes", sample, "--out", "type.toml/ds", "--no-progress"],
            5,
            "type.toml",
        ),
        (
            "rejects over the input",
            ["build", "--episodes", "holder/e.jsonl", "--rejects", "holder/e.jsonl", *out[:2]],
            5,
            "would be overwritten",
        ),
        (
            "validate's rejects over the input",
            ["validate", "holder/e.jsonl", "--rejects", "holder/e.jsonl"],
            5,
            "would be overwritten",
        ),
        (
            "rejects inside the output",
            ["build", "--episodes", sample, "--out", "out", "--rejects", "out/r.jsonl"],
            5,
            "inside the output folder",
        ),
        (
            "rejects is a folder",
            ["build", "--episodes", sample, "--out", "out", "--rejects", "holder"],
            5,
            "is a folder",
        ),
        (
            "rejects file is the cache",
            ["build", "--episodes", sample, "--rejects", "c", "--cache-dir", "c", *out[:2]],
            5,
            "is the cache c or inside it",
        ),
        (
            "cache inside the output",
            ["build", "--episodes", sample, "--cache-dir", str(tmp / "out" / "c"), *out],
            5,
            "overlap",
        ),
        ("nothing to build", ["build", *out], 1, "nothing to build"),
        ("splits over 1", ["build", "--config", "splits.toml", *out], 1, "add up to 1"),
        ("bad pattern", ["build", "--config", "pattern.toml", *out], 1, "regular expression"),
        ("report over a file", ["report", "out", "--out", "type.toml"], 1, "is not a page"),
        (
            "report under a file",
            ["report", "out", "--out", "type.toml/r.html"],
            5,
            "type.toml is a file, not a folder",
        ),
        (
            "export under a file",
            ["export-jsonl", "out", "--out", "type.toml/e.jsonl"],
            1,
            "cannot write it (Not a directory)",
        ),
        (
            "report with no such tokenizer",
            ["report", "out", "--tokenizer", "nothere"],
            1,
            "no such file or folder — name a tokenizer.json",
        ),
        (
            "default config unknown",
            ["build", "--config", "default.toml", "--episodes", sample, *out],
            1,
            "no config of this build",
        ),
        ("size category unknown", ["build", "--config", "size.toml", *out], 1, "size_category"),
        (
            "ray cluster unreachable",
            [
                "build",
                "--engine",
                "ray",
                "--ray-address",
                "127.0.0.1:1",
                "--episodes",
                sample,
                *out,
            ],
            5,
            "no Ray cluster answers",
        ),
        (
            "sessions init on a folder",
            ["sessions", "init", f"sqlite:///{tmp / 'holder'}"],
            1,
            "is a folder",
        ),
        (
            "sessions init on a non-database",
            ["sessions", "init", f"sqlite:///{tmp / 'type.toml'}"],
            1,
            "not a database",
        ),
        (
            "sessions init on a server that does not answer",
            ["sessions", "init", "postgresql://postgres@127.0.0.1:1/x"],
            5,
            "cannot connect",
        ),
        (
            "publish without a token",
            ["publish", str(tmp / "out"), "--repo", "a/b", "--version", "1.0.0"],
            2,
            "no Hugging Face token",
        ),
        ("workers past any pool", ["build", "--workers", "2147483647", *out], 1, "to 1024"),
        ("input name too long", ["build", "--episodes", "b" * 300 + ".jsonl", *out], 1, "too long"),
        (
            "rejects name too long",
            ["build", "--episodes", sample, *out, "--rejects", "r" * 300 + ".jsonl"],
            5,
            "File name too long",
        ),
        (
            "rejects where nobody writes",
            ["build", "--episodes", sample, *out, "--rejects", "/sys/rejects.jsonl"],
            5,
            "/sys: not writable",
        ),
        (  # os.access says yes; no file can be made there, even by root
            "rejects where no file can be made",
            ["build", "--episodes", sample, *out, "--rejects", "/proc/rejects.jsonl"],
            5,
            "/proc: not writable",
        ),
        (
            "timeout of no bound",
            ["build", "--episodes", sample, *out, "--timeout", "inf"],
            1,
            "above 0",
        ),
        (
            "answer tolerance of no bound",
            ["build", "--episodes", sample, *out, "--answer-tolerance", "inf"],
            1,
            "must be a finite 0 or more",
        ),
    ]


N_CASES = 64


def test_there_are_as_many_cases_as_parameters(tmp_path: Path) -> None:
    assert len(_cases(tmp_path)) == N_CASES


@pytest.fixture(scope="module")
def previous_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("previous") / "out"
    argv = ["build", "--episodes", str(SAMPLE), "--out", str(out), "--no-progress"]
    subprocess.run([str(EPISODES), *argv, "--rejects", str(out.parent / "r.jsonl")], check=True)
    return out


def _state(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with the digest of its bytes ("" for a folder)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else ""
        for p in sorted(folder.rglob("*"))
    }


@contextmanager
def lock_held_by_another_build(tmp_path: Path, held: bool) -> Iterator[None]:
    """The hold a running build into ``tmp_path/out`` has on its lock (when ``held``)."""
    if not held:
        yield
        return
    with open(tmp_path / ".out.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield


@pytest.mark.parametrize("index", range(N_CASES))
def test_bad_invocation_is_one_line(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, previous_build: Path, index: int
) -> None:
    name, argv, code, needle = _cases(tmp_path)[index]
    shutil.copytree(previous_build, tmp_path / "out")
    env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
    env["HF_HOME"] = str(tmp_path_factory.mktemp("hf_home"))  # no saved login either
    with lock_held_by_another_build(tmp_path, name == "lock held"):
        before = _state(tmp_path)
        proc = subprocess.run(
            [str(EPISODES), *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        after = _state(tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == code, (name, proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, name
    assert len(lines) == 1, (name, proc.stderr)
    assert needle in lines[0], (name, lines[0])
    # A refused build keeps its rejects (they say why); nothing else is new, nothing changed.
    # (beside the rejects file of the build left in place, which stays that build's)
    kept = {"rejects.refused.jsonl"} if code in (2, 3) and argv[0] == "build" else set()
    assert set(after) - set(before) <= kept, (name, sorted(set(after) - set(before)))
    assert {k: v for k, v in after.items() if k in before} == before, name


def test_a_missing_postgresql_driver_is_named_before_any_work(tmp_path: Path) -> None:
    """Run with the driver hidden from the import system, as when it was left out."""
    hide = tmp_path / "hide"
    hide.mkdir()
    # None in sys.modules: import fails and find_spec answers None, as for a missing module
    (hide / "sitecustomize.py").write_text(
        "import sys\nsys.modules['adbc_driver_postgresql'] = None\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hide), os.environ.get("PYTHONPATH", "")]),
    }
    argv = ["build", "--sessions", "postgresql://u@127.0.0.1:1/db", "--out", str(tmp_path / "o")]
    proc = subprocess.run(
        [str(EPISODES), *argv, "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.strip().endswith(
        "pip install adbc-driver-postgresql (or reinstall agent-traces with its dependencies)"
    )
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hide"]


@pytest.mark.parametrize(
    ("module", "argv", "said"),
    [
        (
            "adbc_driver_postgresql",
            ["sessions", "init", "postgresql://u@127.0.0.1:1/db"],
            "pip install adbc-driver-postgresql",
        ),
        (
            "adbc_driver_sqlite",
            ["sessions", "init", "sqlite:///s.db"],
            "pip install adbc-driver-sqlite",
        ),
    ],
)
def test_a_missing_driver_is_named_by_every_command(
    module: str, argv: list[str], said: str, tmp_path: Path
) -> None:
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hide), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [str(EPISODES), *argv], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 5, proc.stderr
    assert said in proc.stderr and "internal error" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_ctrl_c_while_the_commands_load_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Building the parser imports every command's module (a second or two on a cold start):
    # an interrupt then is the user's, as later in the run.
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_build_parser", interrupted)
    assert cli.main(["build"]) == exit_codes.INTERRUPTED
    err = capsys.readouterr().err
    assert err == "episodes: interrupted — run it again\n"


def test_a_cache_whose_contents_cannot_be_written_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cache made by another user: writable at its top, its lock and entries not. (The test
    # runs as root, for whom every mode is writable: the OS's answer is what is replaced.)
    from builder.cli import preflight

    cache = tmp_path / "c"
    (cache / "entries").mkdir(parents=True)
    (cache / ".lock").write_text("")
    real = os.access
    monkeypatch.setattr(
        preflight.os, "access", lambda p, mode: Path(p).name != ".lock" and real(p, mode)
    )
    with pytest.raises(preflight.FolderProblem, match=r"\.lock: not writable") as caught:
        preflight.check_cache_contents(cache)
    assert caught.value.hint.startswith("choose another --cache-dir")
