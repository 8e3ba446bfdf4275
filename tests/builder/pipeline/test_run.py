"""The build's surroundings (``builder.pipeline.run.BuildRun``) and the reject-ratio gate,
from values: whatever a stage does, the work folder goes; the rejects are kept only when the
build finished or the data refused it."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.errors import UNAVAILABLE, DataRefused, one_line
from builder.pipeline import BuildFailed, check_reject_ratio
from builder.pipeline.run import BuildRun, WorkFolderRemoved
from builder.validate.reject import FieldError, Reject
from schemas.stages import Rejected
from schemas.vocabulary import CHECK_FAILED, INVALID_JSON


def config(tmp_path: Path) -> BuildConfig:
    return BuildConfig(out=tmp_path / "ds", rejects=tmp_path / "rejects.jsonl")


def reject() -> Reject:
    return Reject("in.jsonl", 3, INVALID_JSON, (FieldError("$", "not JSON"),), b"{")


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


def test_a_stage_that_fails_leaves_no_work_folder_and_no_rejects(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="disk"), BuildRun.start(config(tmp_path)) as run:
        run.staged.mkdir(parents=True)
        (run.staged / "part.parquet").write_bytes(b"x")
        run.rejects.add(reject())
        raise OSError("disk went away")
    assert leftovers(tmp_path) == []


def test_a_refused_build_keeps_its_rejects(tmp_path: Path) -> None:
    with pytest.raises(DataRefused), BuildRun.start(config(tmp_path)) as run:
        run.rejects.add(reject())
        raise BuildFailed("too many rejects")
    assert leftovers(tmp_path) == ["rejects.jsonl"]
    assert (tmp_path / "rejects.jsonl").read_text().count("\n") == 1


def test_a_finished_build_keeps_its_rejects_and_not_its_work(tmp_path: Path) -> None:
    with BuildRun.start(config(tmp_path)) as run:
        run.rejects.add(reject())
        run.finished()
    assert leftovers(tmp_path) == ["rejects.jsonl"]
    # and the value the manifest records it by: the file's sha256
    written = hashlib.sha256((tmp_path / "rejects.jsonl").read_bytes()).hexdigest()
    assert run.rejects.summary() == Rejected({INVALID_JSON: 1}, written)


def test_the_reject_ratio_is_judged_from_values(tmp_path: Path) -> None:
    gate = BuildConfig(out=tmp_path / "ds", rejects=tmp_path / "r.jsonl", max_reject_ratio=0.2)
    check_reject_ratio(gate, 10, Rejected.of({INVALID_JSON: 2}))  # 20 %: allowed
    with pytest.raises(BuildFailed, match="3 of 10 records rejected") as refused:
        check_reject_ratio(gate, 10, Rejected.of({INVALID_JSON: 1, CHECK_FAILED: 2}))
    assert refused.value.strict_checks and "2 of them by --strict" in str(refused.value)
    assert Rejected.of({INVALID_JSON: 0, CHECK_FAILED: 2}).by_kind == {CHECK_FAILED: 2}


def test_the_work_folder_is_there_while_the_build_runs(tmp_path: Path) -> None:
    with BuildRun.start(config(tmp_path)) as run:
        assert run.work.is_dir()
        run.finished()
    assert not run.work.exists()


def test_a_failure_after_the_work_folder_was_removed_says_so(tmp_path: Path) -> None:
    with pytest.raises(WorkFolderRemoved) as info, BuildRun.start(config(tmp_path)) as run:
        run.rejects.add(reject())
        shutil.rmtree(run.work)  # by someone else, while the build runs
        (run.work / "tables" / "00001").mkdir()  # the build's next step fails
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert info.value.exit_code == UNAVAILABLE
    line = one_line("build", info.value)
    assert f"its work folder {run.work} was removed while it ran" in line
    assert f"{tmp_path / 'ds'} is as it was" in line
    assert leftovers(tmp_path) == []


def test_a_failure_with_the_work_folder_in_place_is_not_blamed_on_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), BuildRun.start(config(tmp_path)) as run:
        (run.work / "tables" / "00001").mkdir()
