"""``episodes build --from DIR`` builds again from a build's tables alone: every config's
Parquet files are byte for byte those of the build from the JSONL, and the manifest records
where the build came from. ``export-jsonl --sessions-db`` gives back the sessions."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from builder.cli.episodes import main
from builder.config import load_config
from builder.pipeline import BuildReport, build

ROOT = Path(__file__).resolve().parents[2]


def parquet_digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*.parquet")
    }


def sample_into(folder: Path, **settings: Any) -> BuildReport:
    """The sample, with ``settings`` changed, built into ``folder``."""
    config = load_config(ROOT / "dataset.toml")
    return build(replace(config, out=folder / "ds", rejects=folder / "r.jsonl", **settings))


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> BuildReport:
    """The sample (episodes in both layouts, question banks, sessions), in a folder the
    test may move."""
    out = tmp_path_factory.mktemp("original")
    config = load_config(ROOT / "dataset.toml")
    return build(replace(config, out=out / "dataset", rejects=out / "rejects.jsonl"))


def test_build_from_a_folder_equals_the_build_from_the_jsonl(
    original: BuildReport, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    argv = ["build", "--from", str(original.out), "--out", str(again / "dataset")]
    argv += ["--rejects", str(again / "rejects.jsonl"), "--config", str(ROOT / "dataset.toml")]
    assert main([*argv, "--no-progress"]) == 0
    before, after = parquet_digests(original.out), parquet_digests(again / "dataset")
    assert len(before) > 40 and after == before
    made = json.loads((again / "dataset" / "manifest.json").read_text())["built_from"]
    source = (original.out / "manifest.json").read_bytes()
    assert made["source"] == str(original.out)
    assert made["manifest_sha256"] == hashlib.sha256(source).hexdigest()
    assert not list(again.glob(".*.from"))  # the restored inputs are gone


def test_from_replaces_the_inputs_it_is_not_given_with_them(
    original: BuildReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["build", "--from", str(original.out), "--episodes", "x.jsonl"]
    assert main([*argv, "--out", str(tmp_path / "ds"), "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--from" in err[0] and "drop --episodes" in err[0]


def test_from_a_folder_with_no_build_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["build", "--from", str(tmp_path), "--out", str(tmp_path / "ds")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no build there" in err[0]


def test_export_jsonl_writes_the_sessions_back_as_they_were(
    original: BuildReport, tmp_path: Path
) -> None:
    db = tmp_path / "sessions.db"
    argv = ["export-jsonl", str(original.out), "--out", str(tmp_path / "e.jsonl")]
    assert main([*argv, "--sessions-db", f"sqlite:///{db}"]) == 0
    source = sqlite3.connect(":memory:")
    source.executescript((ROOT / "data" / "sessions" / "sample.sql").read_text())
    back = sqlite3.connect(db)
    for query in (
        "SELECT session_id, initial_instruction, initial_code, initial_exec_output, verified "
        "FROM sessions ORDER BY session_id",
        "SELECT action_uuid, session_id, action_id, action_type, action, correct, source "
        "FROM actions ORDER BY action_uuid",
    ):
        rows = back.execute(query).fetchall()
        assert rows and rows == source.execute(query).fetchall()
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    assert len(lines) == original.manifest["configs"]["episodes"]["rows"]["train"] + sum(
        original.manifest["configs"]["episodes"]["rows"][s] for s in ("validation", "test")
    )


def test_build_from_keeps_the_segments_the_inputs_were_read_in(tmp_path: Path) -> None:
    """One segment per episode file: the restored files are cut the same way, whatever
    their sizes now, so the data files are the same files."""
    from builder.cli.build_from import restored_build

    config = load_config(ROOT / "dataset.toml")
    first = build(
        replace(
            config, out=tmp_path / "a" / "ds", rejects=tmp_path / "a" / "r.jsonl", segment_bytes=1
        )
    )
    again = replace(config, out=tmp_path / "b" / "ds", rejects=tmp_path / "b" / "r.jsonl")
    with restored_build(again, str(first.out)) as restored:
        assert len(restored.segments) == 3
        second = build(restored)
    assert parquet_digests(second.out) == parquet_digests(first.out)
    assert any("-00003-" in name for name in parquet_digests(first.out))


def test_build_from_needs_no_config_file(
    original: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run where no ``dataset.toml`` is (as the docs' example is): ``--from`` gives the
    inputs, so "nothing to build" is not said of a build that has them."""
    monkeypatch.chdir(tmp_path)
    argv = ["build", "--from", str(original.out), "--out", "again/dataset"]
    assert main([*argv, "--rejects", "again/rejects.jsonl", "--no-progress"]) == 0
    made = json.loads((tmp_path / "again" / "dataset" / "manifest.json").read_text())
    source = json.loads((original.out / "manifest.json").read_text())
    assert made["built_from"]["source"] == str(original.out)
    valid = [(i["path"], i["valid"]) for i in made["inputs"]]
    assert valid == [(i["path"], i["valid"]) for i in source["inputs"]]  # each input read again


def test_build_from_a_build_with_history_keeps_its_splits(tmp_path: Path) -> None:
    """v2 was built over v1 in one folder: its splits follow v1's, and it carries the v1
    questions it lacks. Built again from v2's tables into a new folder, the splits (and so
    every config) are v2's, carried rows included."""
    from samples.paraphrases import questions
    from tests.e2e.held_out_data import write_episodes

    texts = [t for t, _, _ in questions(260, seed=5)]
    out = tmp_path / "v" / "dataset"
    for name, part in (("v1", texts[:200]), ("v2", texts[100:])):
        source = write_episodes(tmp_path / f"{name}.jsonl", part, seed=1)
        argv = ["build", "--episodes", str(source), "--out", str(out), "--no-progress"]
        assert main([*argv, "--rejects", str(tmp_path / f"{name}-rejects.jsonl")]) == 0
    carried = [p for p in (out / "splits").glob("*.parquet") if "-carried-" in p.name]
    assert carried
    again = tmp_path / "again" / "dataset"
    argv = ["build", "--from", str(out), "--out", str(again), "--no-progress"]
    assert main([*argv, "--rejects", str(tmp_path / "again-rejects.jsonl")]) == 0
    assert parquet_digests(again) == parquet_digests(out)


def test_build_from_takes_the_settings_the_build_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rebuilt where its ``dataset.toml`` is not, a build keeps its own salt, hash scheme,
    answer tolerance and card: the same files, not the defaults' reshuffled splits."""
    config = load_config(ROOT / "dataset.toml")
    source = sample_into(tmp_path / "a", hash_precision=2, answer_tolerance=0.1)
    monkeypatch.chdir(tmp_path)
    argv = ["build", "--from", str(source.out), "--out", "b/ds", "--rejects", "b/r.jsonl"]
    assert main([*argv, "--no-progress"]) == 0
    again = tmp_path / "b" / "ds"
    assert parquet_digests(again) == parquet_digests(source.out)
    made = json.loads((again / "manifest.json").read_text())
    for section in ("options", "card", "hashing"):
        assert made[section] == source.manifest[section]
    assert made["splits"]["salt"] == config.split_salt != load_config(None).split_salt
    assert "settings_given_here" not in made["built_from"]


def test_build_from_names_the_settings_given_here_that_differ(
    original: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A setting given here (a flag, a ``dataset.toml`` key) stands, and the manifest says
    which of them differ from the rebuilt build's."""
    (tmp_path / "dataset.toml").write_text(
        '[derive]\ndpo_max_pairs_per_episode = 1\n[card]\nlicense = "mit"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    argv = ["build", "--from", str(original.out), "--out", "b/ds", "--rejects", "b/r.jsonl"]
    assert main([*argv, "--hash-precision", "exact", "--no-progress"]) == 0
    made = json.loads((tmp_path / "b" / "ds" / "manifest.json").read_text())
    assert made["built_from"]["settings_given_here"] == "card.license, dpo_max_pairs_per_episode"
    assert made["options"]["dpo_max_pairs_per_episode"] == 1
    assert made["card"]["license"] == "mit"
    assert made["card"]["pretty_name"] == original.manifest["card"]["pretty_name"]
    assert made["splits"]["salt"] == original.manifest["splits"]["salt"]
    assert made["configs"]["sft"] == original.manifest["configs"]["sft"]


def test_build_from_a_decontaminated_build_needs_its_eval_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without its eval sets the rows they matched would train again: refused in one line;
    given again, the rebuild is the build."""
    bank = ROOT / "data" / "questions" / "synthetic" / "questions.jsonl"
    item = json.loads(bank.read_text(encoding="utf-8").splitlines()[0])["question_text"]
    evals = tmp_path / "dev.jsonl"
    evals.write_text(json.dumps({"question": item}) + "\n", encoding="utf-8")
    source = sample_into(tmp_path / "a", decontamination_evals=(str(evals),))
    assert source.manifest["decontamination"]["evals"][0]["matched_items"] == 1
    argv = ["build", "--from", str(source.out), "--config", str(ROOT / "dataset.toml")]
    argv += ["--out", str(tmp_path / "b" / "ds"), "--rejects", str(tmp_path / "b.jsonl")]
    assert main([*argv, "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "decontaminated against dev" in err[0], err
    assert not (tmp_path / "b").exists()
    assert main([*argv, "--decontaminate", str(evals), "--no-progress"]) == 0
    assert parquet_digests(tmp_path / "b" / "ds") == parquet_digests(source.out)


@pytest.mark.parametrize(
    ("ratios", "says"),
    [
        ({"train": 0.8, "validation": 0.1, "test": 0.1, "dev": 0.1}, "splits.ratios"),
        ([0.9, 0.05, 0.05], "splits.ratios"),
        ({"train": 0.5, "validation": 0.1, "test": 0.1}, "add up to 0.7, not 1"),
        ({"train": "most", "validation": 0.1, "test": 0.1}, "split_train"),
    ],
)
def test_settings_a_manifest_records_that_cannot_be_used_are_one_line(
    original: BuildReport,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    ratios: object,
    says: str,
) -> None:
    import shutil

    source = tmp_path / "src"
    shutil.copytree(original.out, source)
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["splits"]["ratios"] = ratios
    (source / "manifest.json").write_text(json.dumps(manifest))
    argv = ["build", "--from", str(source), "--out", str(tmp_path / "b"), "--no-progress"]
    assert main([*argv, "--config", "/dev/null", "--rejects", str(tmp_path / "r.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not (tmp_path / "b").exists()


def test_paths_given_on_the_command_line_are_published_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative ``--decontaminate`` file, ``--from`` folder and ``--previous`` build are
    recorded relative to the folder the build runs in, as the config's own inputs are: no
    local folder name reaches the manifest."""
    monkeypatch.chdir(tmp_path)
    episodes = ROOT / "data" / "episodes" / "groups.jsonl"
    (tmp_path / "ev.jsonl").write_text('{"text": "a question nobody asks in the sample"}\n')
    common = ["--no-progress", "--config", str(tmp_path / "none.toml")]
    (tmp_path / "none.toml").write_text("")
    first = ["build", "--episodes", str(episodes), "--out", "a/ds", "--rejects", "a/r.jsonl"]
    assert main([*first, "--decontaminate", "ev.jsonl:text", *common]) == 0
    manifest = json.loads((tmp_path / "a" / "ds" / "manifest.json").read_text())
    assert [e["file"] for e in manifest["decontamination"]["evals"]] == ["ev.jsonl"]
    again = ["build", "--from", "a/ds", "--out", "b/ds", "--rejects", "b/r.jsonl"]
    assert main([*again, "--decontaminate", "ev.jsonl:text", *common]) == 0
    manifest = json.loads((tmp_path / "b" / "ds" / "manifest.json").read_text())
    assert manifest["built_from"]["source"] == "a/ds"
    assert manifest["splits"]["previous"]["source"] == "a/ds"
    assert str(tmp_path) not in (tmp_path / "b" / "ds" / "manifest.json").read_text()
