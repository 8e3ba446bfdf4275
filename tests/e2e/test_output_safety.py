"""What a build may write over: only a folder a build made (or an empty one), never the
working directory; a rejects file is never a folder; a refused build leaves the build in
place whole, its rejects file included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builder.cli.preflight import FolderProblem, check_rejects_path, check_replaceable
from builder.config import BuildConfig
from builder.pipeline import BuildFailed, build
from builder.report.folder import default_rejects, read_rejects

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data/episodes/episodes.jsonl"
BAD = ROOT / "data/bad/bad_lines.jsonl"


def episodes(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            *args,
            *(["--no-progress"] if args[0] == "build" else []),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def fake_build(folder: Path, files: dict[str, str] | None) -> Path:
    """A folder as a build leaves it: its data files, card and manifest (``files`` None: an
    older builder's manifest, which lists none)."""
    folder.mkdir(exist_ok=True)
    for rel in files or {}:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(b"PAR1")
    (folder / "README.md").write_text("---\n---\n")
    manifest = {"builder_version": "0.1.0", **({"files": files} if files is not None else {})}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_folder_a_build_made_or_an_empty_one_may_be_replaced(tmp_path: Path) -> None:
    check_replaceable(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    check_replaceable(tmp_path / "empty")
    built = fake_build(tmp_path / "built", {"sft/train-0.parquet": "ab", "images/c.png": "cd"})
    check_replaceable(built)
    older = fake_build(tmp_path / "older", None)
    check_replaceable(older)


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda f: (f / "notes.txt").write_text("mine"), "notes.txt"),
        (
            lambda f: (fake_build(f, {"sft/a.parquet": "x"}) / "sft" / "b.txt").write_text(""),
            "sft/b.txt",
        ),
        (lambda f: (f / "manifest.json").write_text('{"name": "not ours"}'), "manifest.json"),
        (lambda f: (f / "link").symlink_to(f.parent), "link"),
    ],
    ids=["a user's file", "a file added to a build", "another manifest", "a link"],
)
def test_a_folder_holding_files_no_build_wrote_is_refused(
    tmp_path: Path, make: object, named: str
) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    make(folder)  # type: ignore[operator]
    with pytest.raises(FolderProblem, match=f"did not write \\({named}\\)") as caught:
        check_replaceable(folder)
    assert "remove that folder" in caught.value.hint


def test_a_folder_of_many_files_is_refused_at_its_first_few(tmp_path: Path) -> None:
    for name in "abcde":
        (tmp_path / f"{name}.txt").write_text("")
    with pytest.raises(FolderProblem, match=r"did not write \(a\.txt, b\.txt, c\.txt, …\)"):
        check_replaceable(tmp_path)


def test_a_file_as_the_output_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ds").write_text("mine")
    with pytest.raises(FolderProblem, match="is a file"):
        check_replaceable(tmp_path / "ds")


def test_a_build_into_a_folder_of_the_users_refuses_and_deletes_nothing(tmp_path: Path) -> None:
    (tmp_path / "cw").mkdir()
    (tmp_path / "cw" / "notes.txt").write_text("mine\n")
    argv = ["--episodes", str(SAMPLE), "--out", "cw", "--rejects", "r.jsonl"]
    result = episodes("build", *argv, cwd=tmp_path)
    assert result.returncode == 5
    line = one_line(result)
    assert "cw holds files the builder did not write (notes.txt)" in line
    assert line.endswith("or remove that folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cw"]
    assert (tmp_path / "cw" / "notes.txt").read_text() == "mine\n"
    # An empty folder is built into, and a build's folder rebuilt.
    (tmp_path / "cw" / "notes.txt").unlink()
    for _ in range(2):
        assert episodes("build", *argv, cwd=tmp_path).returncode == 0
        assert (tmp_path / "cw" / "manifest.json").is_file()


@pytest.mark.parametrize("out", [".", "absolute", ".."])
def test_the_working_directory_is_never_the_output(tmp_path: Path, out: str) -> None:
    here = tmp_path / "t"
    here.mkdir()
    (here / "precious").write_text("")
    folder = str(here) if out == "absolute" else out
    argv = ["--episodes", str(SAMPLE), "--out", folder, "--rejects", str(tmp_path / "r.jsonl")]
    result = episodes("build", *argv, cwd=here)
    assert result.returncode == 5
    assert "is the current folder or holds it" in one_line(result)
    assert [p.name for p in here.iterdir()] == ["precious"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]  # no rejects, no partial file


def test_relative_outputs_mean_the_users_directory_when_the_build_runs_in_the_configs(
    tmp_path: Path,
) -> None:
    """A config whose inputs lie in its folder runs the build there; outputs named on the
    command line relative to where it was run stay there."""
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "e.jsonl").write_bytes(SAMPLE.read_bytes())
    (tmp_path / "cfg" / "dataset.toml").write_text('[inputs]\nepisodes = ["e.jsonl"]\n')
    (tmp_path / "me").mkdir()
    argv = ["--config", "../cfg/dataset.toml", "--out", "ds", "--rejects", "r.jsonl"]
    result = episodes("build", *argv, cwd=tmp_path / "me")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "me").iterdir()) == ["ds", "r.jsonl"]
    assert sorted(p.name for p in (tmp_path / "cfg").iterdir()) == ["dataset.toml", "e.jsonl"]


def test_validate_refuses_a_folder_as_its_rejects_file(tmp_path: Path) -> None:
    (tmp_path / "somedir").mkdir()
    result = episodes("validate", str(SAMPLE), "--rejects", "somedir", cwd=tmp_path)
    assert result.returncode == 5
    assert one_line(result) == (
        "episodes validate: somedir is a folder, not a file to write — choose another --rejects"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["somedir"]  # no partial file left


def test_a_rejects_file_is_no_folder_and_no_input(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(FolderProblem, match="is a folder"):
        check_rejects_path(tmp_path / "d", [], "--rejects")
    (tmp_path / "in.jsonl").write_text("")
    with pytest.raises(FolderProblem, match="would be overwritten"):
        check_rejects_path(tmp_path / "in.jsonl", [str(tmp_path / "in.jsonl")], "--rejects")
    check_rejects_path(tmp_path / "new" / "r.jsonl", [str(tmp_path / "in.jsonl")], "--rejects")
    assert not (tmp_path / "new").exists()


def test_a_refused_build_leaves_the_previous_build_reportable(tmp_path: Path) -> None:
    """The rejects file stays the one of the build in place (``report`` reads the two
    together); the refused build's rejects, which say why, go beside it and are named."""
    out, rejects = tmp_path / "x" / "ds", tmp_path / "x" / "rejects.jsonl"
    config = BuildConfig(episodes=(str(BAD),), out=out, rejects=rejects, max_reject_ratio=1.0)
    build(config)
    before = rejects.read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    refused = tmp_path / "x" / "rejects.refused.jsonl"
    with pytest.raises(BuildFailed, match=f"see {refused}"):
        build(BuildConfig(episodes=(str(BAD),), out=out, rejects=rejects))
    assert rejects.read_bytes() == before
    assert default_rejects(out) == rejects
    found = read_rejects(rejects, manifest["rejects"]["by_kind"])  # what `report` checks
    assert sum(found.by_kind.values()) == manifest["rejects"]["total"] > 0
    assert refused.read_bytes() == before  # the same input: the same rejects


def test_a_first_build_refused_keeps_its_rejects_in_the_rejects_file(tmp_path: Path) -> None:
    rejects = tmp_path / "rejects.jsonl"
    with pytest.raises(BuildFailed, match=f"see {rejects}$"):
        build(BuildConfig(episodes=(str(BAD),), out=tmp_path / "ds", rejects=rejects))
    assert rejects.read_text() and not (tmp_path / "ds").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rejects.jsonl"]


def test_a_link_to_the_output_folder_stays_a_link_to_the_build(tmp_path: Path) -> None:
    """An output folder linked onto another disk: the build goes where the link points, the
    link is kept, and nothing is written beside it, at the first build and the next."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "here").mkdir()
    link = tmp_path / "here" / "ds"
    link.symlink_to(tmp_path / "elsewhere" / "ds", target_is_directory=True)
    for _ in range(2):
        done = episodes("build", "--episodes", str(SAMPLE), "--out", str(link), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert link.is_symlink()
        assert (tmp_path / "elsewhere" / "ds" / "manifest.json").is_file()
        assert sorted(p.name for p in (tmp_path / "here").iterdir()) == ["ds"]
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["ds"]
    built = BuildConfig(episodes=(str(SAMPLE),), out=link, rejects=tmp_path / "r.jsonl")
    build(built)  # a library caller's build goes through the link the same way
    assert link.is_symlink()
    assert sorted(p.name for p in (tmp_path / "here").iterdir()) == ["ds"]
