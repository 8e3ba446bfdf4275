"""Held-out integrity, end to end: the sample's splits, a build that grows, decontamination
against a planted eval file, and what --strict refuses."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from builder.config import BuildConfig
from builder.derive.splits.previous import PreviousUnreadable
from builder.pipeline import BuildReport, build
from samples.paraphrases import paraphrase, questions
from schemas.objectives import OBJECTIVES
from tests.builder.derive.splits.test_assign import leaks, similarity
from tests.e2e.held_out_data import write_episodes

TRAINING = list(OBJECTIVES)


def read(folder: Path, config: str) -> pl.DataFrame:
    files = sorted((folder / config).glob("*.parquet"))
    return pl.concat(
        [pl.read_parquet(f).with_columns(split=pl.lit(f.name.split("-", 1)[0])) for f in files],
        how="diagonal_relaxed",
    )


def test_every_training_config_of_the_sample_has_rows_in_every_split(
    sample_build: BuildReport,
) -> None:
    rows = sample_build.manifest["configs"]
    for name in TRAINING:
        assert all(rows[name]["rows"].get(s, 0) > 0 for s in ("train", "validation", "test")), (
            name,
            rows[name]["rows"],
        )


def test_the_sample_holds_out_no_near_copy(sample_build: BuildReport) -> None:
    splits = read(sample_build.out, "splits").rename({"normalized_text": "text"})
    assert leaks(splits, 0.5) == []
    audit = sample_build.manifest["splits"]["audit"]
    assert audit["at_or_above_threshold"] == 0
    assert audit["held_out_questions"] == splits.filter(pl.col("split") != "train").height


def test_the_card_and_the_report_show_the_audit(sample_build: BuildReport, tmp_path: Path) -> None:
    card = (sample_build.out / "README.md").read_text()
    assert "## Held-out integrity" in card and "## How splits were assigned" in card
    # the reader learns what a word is where n-grams are counted (characters in Chinese...)
    assert "each character is a word" in card and "MinHash" not in card
    page = tmp_path / "report.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "report",
            str(sample_build.out),
            "--out",
            str(page),
            "--rejects",
            str(sample_build.out.parent / "rejects.jsonl"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert 'id="held-out"' in html and 'data-metric="held_out.at_or_above_threshold"' in html
    assert 'data-chart="held-out-similarity"' in html


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A build of 400 questions, then the same output rebuilt with 10 % more: near-copies of
    held-out questions, bridges between two splits, and unrelated ones."""
    root = tmp_path_factory.mktemp("grown")
    texts = [t for t, _, _ in questions(400, seed=41)]
    first = write_episodes(root / "first.jsonl", texts, seed=1)
    config = BuildConfig(
        episodes=(str(first),), out=root / "dataset", rejects=root / "rejects.jsonl"
    )
    config = replace(config, split_train=0.8, split_validation=0.1, split_test=0.1)
    before = build(config)
    splits = read(root / "dataset", "splits").select("question_id", "normalized_text", "split")
    rng = random.Random(2)
    held = splits.filter(pl.col("split") == "test").get_column("normalized_text").to_list()
    trains = splits.filter(pl.col("split") == "train").get_column("normalized_text").to_list()
    copies = []
    for text in held:
        copy = paraphrase(text, rng)
        if copy not in texts and similarity(copy, text) >= 0.5:
            copies.append(copy)
    bridges = []
    for a in held:
        for b in trains:
            joined = a + " " + b
            if similarity(joined, a) >= 0.5 and similarity(joined, b) >= 0.5:
                bridges.append(joined)
                break
        if len(bridges) == 3:
            break
    extra = copies[:20] + bridges + [t for t, _, _ in questions(20, seed=77)]
    second = write_episodes(root / "second.jsonl", extra, seed=2)
    after = build(replace(config, episodes=(str(first), str(second))))
    return {
        "before": splits,
        "after": read(root / "dataset", "splits"),
        "copies": copies[:20],
        "bridges": bridges,
        "manifest": after.manifest,
        "out": root / "dataset",
        "first_manifest": before.manifest,
    }


def test_no_question_already_assigned_moves(grown: dict) -> None:
    joined = grown["before"].join(
        grown["after"].select("question_id", after="split"), on="question_id"
    )
    assert joined.height == grown["before"].height
    assert joined.filter(pl.col("split") != pl.col("after")).height == 0
    # the folder's own earlier build, followed: not recorded, so a rebuild writes the same bytes
    assert "previous" not in grown["manifest"]["splits"]


def test_near_copies_follow_their_group(grown: dict) -> None:
    after = grown["after"].with_columns(text=pl.col("normalized_text"))
    copies = after.filter(pl.col("text").is_in([c.lower() for c in grown["copies"]]))
    assert copies.height == len(grown["copies"]) >= 5
    # a copy also as close to a training question bridges the two splits: held out
    elsewhere = copies.filter(pl.col("split") != "test").get_column("question_id")
    assert elsewhere.len() < copies.height / 2
    for name in TRAINING:
        if (grown["out"] / name).is_dir():
            rows = read(grown["out"], name)
            assert rows.filter(pl.col("question_id").is_in(elsewhere.implode())).height == 0


def test_bridges_are_held_out_of_every_training_config_and_counted(grown: dict) -> None:
    bridges = [b.lower() for b in grown["bridges"]]
    assert bridges
    groups = grown["manifest"]["splits"]["groups"]
    assert groups["bridges_splits"] >= len(bridges)
    ids = grown["after"].filter(pl.col("normalized_text").is_in(bridges)).get_column("question_id")
    assert ids.len() == len(bridges)
    for name in TRAINING:
        if (grown["out"] / name).is_dir():
            rows = read(grown["out"], name)
            assert rows.filter(pl.col("question_id").is_in(ids.implode())).height == 0, name
    # kept in the tables
    questions_table = read(grown["out"], "questions")
    assert questions_table.filter(pl.col("question_id").is_in(ids.implode())).height == len(bridges)
    removed = grown["manifest"]["held_out_rows"]
    assert sum(c.get("bridges_splits", 0) for c in removed.values()) > 0


def test_a_previous_build_under_other_settings_keeps_only_its_held_out(
    grown: dict, tmp_path: Path
) -> None:
    """Not followed (other settings): its training questions are split afresh, but what it
    held out was published as held out and never trains later."""
    source = grown["out"].parent / "first.jsonl"
    config = BuildConfig(
        episodes=(str(source),),
        out=tmp_path / "dataset",
        rejects=tmp_path / "rejects.jsonl",
        split_previous=str(grown["out"]),
        split_salt="another salt",
    )
    report = build(config)
    earlier = read(grown["out"], "splits").select("question_id", "split")
    held = earlier.filter(pl.col("split") != "train")
    previous = report.manifest["splits"]["previous"]
    assert previous == {
        "source": str(grown["out"]),
        "followed": False,
        "differs": ["ratios", "salt"],
        "held_out": held.height,
    }
    now = read(tmp_path / "dataset", "splits").select("question_id", now="split")
    kept = held.join(now, on="question_id")
    assert kept.height > 20 and (kept["split"] == kept["now"]).all()


def test_the_folder_s_own_build_is_named_without_its_path(grown: dict, tmp_path: Path) -> None:
    """Not followed (other settings), the folder's own build is recorded, by what it is: no
    local folder name is published in the manifest."""
    out = tmp_path / "dataset"
    shutil.copytree(grown["out"], out)
    config = replace(_grown_config(grown, out, "first.jsonl"), split_salt="another salt")
    previous = build(config).manifest["splits"]["previous"]
    held = read(grown["out"], "splits").filter(pl.col("split") != "train")
    assert previous == {
        "source": "the output folder's last build",
        "followed": False,
        "differs": ["salt"],
        "held_out": held.height,
    }
    assert str(tmp_path) not in (out / "manifest.json").read_text()


def test_decontamination_removes_matched_rows_from_every_training_config(
    grown: dict, tmp_path: Path
) -> None:
    texts = grown["before"].get_column("normalized_text").to_list()
    planted = [texts[0], texts[1].upper(), texts[2]]
    unrelated = ["an item about something else entirely, nothing to do with any dataset here"]
    evals = tmp_path / "dabench-dev.jsonl"
    evals.write_text("".join(json.dumps({"question": q}) + "\n" for q in planted + unrelated))
    source = grown["out"].parent / "first.jsonl"
    out = tmp_path / "dataset"
    config = BuildConfig(
        episodes=(str(source),),
        out=out,
        rejects=tmp_path / "rejects.jsonl",
        decontamination_evals=(str(evals),),
        split_train=0.8,
        split_validation=0.1,
        split_test=0.1,
    )
    report = build(config)
    found = report.manifest["decontamination"]
    [summary] = found["evals"]
    assert (summary["name"], summary["items"], summary["matched_items"]) == ("dabench-dev", 4, 3)
    assert summary["matched_questions"] == 3
    ids = (
        grown["before"].filter(pl.col("normalized_text").is_in(texts[:3])).get_column("question_id")
    )
    removed = 0
    for name in TRAINING:
        if (out / name).is_dir():
            rows = read(out, name)
            assert rows.filter(pl.col("question_id").is_in(ids.implode())).height == 0, name
    for name, counts in found["removed_rows"].items():
        removed += counts["dabench-dev"]
        assert name in TRAINING
    assert removed > 0
    assert read(out, "questions").filter(pl.col("question_id").is_in(ids.implode())).height == 3
    assert "## Decontamination" in (out / "README.md").read_text()
    page = tmp_path / "report.html"
    done = run_cli(
        "report", str(out), "--out", str(page), "--rejects", str(tmp_path / "rejects.jsonl"),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert 'data-metric="decontamination.dabench-dev.matched_items" data-value="3"' in html


def run_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *argv], capture_output=True, text=True, cwd=cwd
    )


def build_first(grown: dict, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``episodes build`` of the first version's episodes into ``tmp_path/d``, with ``flags``."""
    source = grown["out"].parent / "first.jsonl"
    out, rejects = str(tmp_path / "d"), str(tmp_path / "r.jsonl")
    return run_cli(
        "build", "--episodes", str(source), "--out", out, "--rejects", rejects, "--no-progress",
        *flags, cwd=tmp_path,
    )  # fmt: skip


def test_strict_refuses_held_out_near_copies(grown: dict, tmp_path: Path) -> None:
    done = build_first(grown, tmp_path, "--split-by", "question", "--strict")
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "held-out questions have a training question" in lines[0]
    assert not (tmp_path / "d").exists()
    # nothing was written, so the line itself names the closest pair and where to see all
    assert ", the closest '" in lines[0] and "build without --strict to see every pair" in lines[0]


def test_strict_refuses_an_eval_matched_above_its_share(grown: dict, tmp_path: Path) -> None:
    texts = grown["before"].get_column("normalized_text").to_list()
    evals = tmp_path / "small.jsonl"
    evals.write_text("".join(json.dumps({"prompt": q}) + "\n" for q in [*texts[:2], "unrelated"]))
    done = build_first(grown, tmp_path, "--decontaminate", f"{evals}:prompt", "--strict")
    assert done.returncode == 3, done.stderr
    assert "eval set small: 66.7% of its items match" in done.stderr


def test_a_missing_eval_file_is_one_line(tmp_path: Path, grown: dict) -> None:
    done = build_first(grown, tmp_path, "--decontaminate", "nowhere.jsonl")
    assert done.returncode == 1, done.stderr  # a usage error, found before any work
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "nowhere.jsonl: no such eval file" in lines[0], done.stderr


@pytest.mark.parametrize("named", [True, False])
def test_an_earlier_build_whose_splits_cannot_be_read_stops_the_build(
    grown: dict, tmp_path: Path, named: bool
) -> None:
    """Its questions' splits would move if it were passed over: the build stops, names the
    file, and leaves that build as it was (``--previous``, or the output folder's own)."""
    earlier = tmp_path / "dataset"
    shutil.copytree(grown["out"], earlier)
    damaged = sorted((earlier / "splits").glob("*.parquet"))[-1]
    damaged.write_bytes(b"")
    before = {p: p.read_bytes() for p in earlier.rglob("*") if p.is_file()}
    out = tmp_path / "again" if named else earlier
    config = BuildConfig(
        episodes=(str(grown["out"].parent / "first.jsonl"),),
        out=out,
        rejects=tmp_path / "rejects.jsonl",
        split_previous=str(earlier) if named else "",
        split_train=0.8,  # the earlier build's settings: it is followed
        split_validation=0.1,
        split_test=0.1,
    )
    with pytest.raises(PreviousUnreadable, match=f"splits file {damaged} cannot be read"):
        build(config)
    assert {p: p.read_bytes() for p in earlier.rglob("*") if p.is_file()} == before


def _grown_config(grown: dict, out: Path, *files: str) -> BuildConfig:
    root = grown["out"].parent
    config = BuildConfig(
        episodes=tuple(str(root / f) for f in files), out=out, rejects=out.parent / "rejects.jsonl"
    )
    return replace(config, split_train=0.8, split_validation=0.1, split_test=0.1)


def _digests(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_bridges_stay_out_of_training_when_the_build_is_made_again(
    grown: dict, tmp_path: Path
) -> None:
    """A bridge is pinned with its reason: rebuilding the same inputs over the grown build
    keeps it out of every training config, and writes the same bytes."""
    out = tmp_path / "dataset"
    shutil.copytree(grown["out"], out)
    build(_grown_config(grown, out, "first.jsonl", "second.jsonl"))
    assert _digests(out) == _digests(grown["out"])
    splits = read(out, "splits")
    bridges = splits.filter(pl.col("normalized_text").is_in([b.lower() for b in grown["bridges"]]))
    assert bridges.height == len(grown["bridges"])
    assert set(bridges.get_column("reason")) == {"bridges_splits"}
    # the planted bridges and copies that also bridge: every one the manifest counts
    bridging = splits.filter(pl.col("reason") == "bridges_splits")
    assert bridging.height == grown["manifest"]["splits"]["groups"]["bridges_splits"]
    for name in TRAINING:
        if (out / name).is_dir():
            rows = read(out, name).filter(
                pl.col("question_id").is_in(bridges["question_id"].implode())
            )
            assert rows.height == 0, name


def test_a_question_left_out_of_a_version_keeps_its_split_when_it_returns(
    grown: dict, tmp_path: Path
) -> None:
    """v2 holds only the first build's training questions: the held-out ones are carried in
    its splits config (``in_build`` false, no rows elsewhere); v3 brings them back with
    near-copies of them, and every one is where v1 put it, every copy with its original."""
    out = tmp_path / "dataset"
    shutil.copytree(grown["out"], out)
    first = grown["before"]
    source = grown["out"].parent / "first.jsonl"
    lines = source.read_text().splitlines()
    trains = set(first.filter(pl.col("split") == "train").get_column("question_id"))
    kept = [line for line in lines if json.loads(line)["question"]["id"] in trains]
    (tmp_path / "trains.jsonl").write_text("\n".join(kept) + "\n")
    v2 = build(replace(_grown_config(grown, out), episodes=(str(tmp_path / "trains.jsonl"),)))
    listed = read(out, "splits")
    away = listed.filter(~pl.col("in_build"))
    held = first.filter(pl.col("split") != "train")
    assert set(away.get_column("question_id")) >= set(held.get_column("question_id"))
    assert v2.manifest["splits"]["questions_per_split"].keys() == {"train"}
    assert (
        read(out, "questions")
        .filter(pl.col("question_id").is_in(away["question_id"].implode()))
        .is_empty()
    )
    build(_grown_config(grown, out, "first.jsonl", "second.jsonl"))
    back = read(out, "splits")
    assert back.get_column("in_build").all()  # every question is back: none carried
    columns = ["question_id", "normalized_text", "split", "reason"]
    assert (
        back.select(columns)
        .sort("question_id")
        .equals(grown["after"].select(columns).sort("question_id"))
    )


def test_carried_texts_are_redacted_again_and_an_unredacted_build_s_are_not_carried(
    tmp_path: Path,
) -> None:
    """v2 learns a secret value (an assignment in one of its questions) that a question only
    v1 held shows: the carried row publishes it redacted. A v1 built without redaction
    carries no text into a redacted v2 (its questions keep their splits by id)."""
    secret, key = "Xq7fK2pQ9vLm3Rt8Wz4bN", "AKIAIOSFODNN7EXAMPLQ"
    base = [t for t, _, _ in questions(30, seed=3)]
    shown = f"why does the request signed with {secret} fail on the churn table"
    leaked = f"my boto client uses {key} and cannot read the churn_eu bucket why"
    v1 = write_episodes(tmp_path / "v1.jsonl", [*base, shown, leaked], seed=1)
    v2 = write_episodes(tmp_path / "v2.jsonl", [*base, f'set api_key = "{secret}" then'], seed=1)

    def built(name: str, source: Path, previous: Path | None, redaction: bool) -> Path:
        out = tmp_path / name / "dataset"
        config = BuildConfig(episodes=(str(source),), out=out, rejects=out.parent / "rejects.jsonl")
        config = replace(config, redaction_enabled=redaction, max_reject_ratio=1.0)
        if previous is not None:
            config = replace(config, split_previous=str(previous))
        build(config)
        return out

    def carried(out: Path) -> dict[str, str | None]:
        rows = read(out, "splits").filter(~pl.col("in_build"))
        return dict(rows.select("question_id", "normalized_text").iter_rows())

    on1 = built("on1", v1, None, True)
    texts = carried(built("on2", v2, on1, True))
    assert len(texts) == 2 and not any(secret.casefold() in (t or "") for t in texts.values())
    assert any("<redacted:secret_assignment>" in (t or "") for t in texts.values())
    off1 = built("off1", v1, None, False)
    on2 = built("off-on2", v2, off1, True)
    assert list(carried(on2).values()) == [None, None]
    for file in on2.rglob("*.parquet"):
        assert key.encode() not in file.read_bytes().upper(), file


def test_a_named_previous_build_and_the_folder_s_own_both_keep_their_questions(
    tmp_path: Path,
) -> None:
    """``--previous`` names v1 while the output folder holds v2 (v1's questions and more):
    v1's assignment stands, and v2's own questions keep the splits v2 gave them, rather
    than being assigned again (and a model trained on v2 tested on its own questions)."""
    texts = [t for t, _, _ in questions(240, seed=41)]
    first = write_episodes(tmp_path / "v1.jsonl", texts[:100], seed=1)
    second = write_episodes(tmp_path / "v2.jsonl", texts[:200], seed=1)
    third = write_episodes(tmp_path / "v3.jsonl", texts, seed=1)

    def config(out: Path, *files: Path, previous: Path | None = None) -> BuildConfig:
        made = BuildConfig(
            episodes=tuple(str(f) for f in files), out=out, rejects=out.parent / "r.jsonl"
        )
        made = replace(made, split_train=0.34, split_validation=0.33, split_test=0.33)
        return replace(made, split_previous=str(previous)) if previous else made

    v1, ds = tmp_path / "v1" / "dataset", tmp_path / "ds" / "dataset"
    build(config(v1, first))
    shutil.copytree(v1, ds)
    build(config(ds, second))
    v2 = read(ds, "splits").select("question_id", "split")
    build(config(ds, third, previous=v1))
    now = read(ds, "splits").select("question_id", now="split")
    moved = v2.join(now, on="question_id").filter(pl.col("split") != pl.col("now"))
    assert v2.height == 200 and moved.is_empty(), moved


def test_a_named_previous_build_made_under_other_settings_leaves_the_folder_s_own(
    tmp_path: Path,
) -> None:
    """``--previous`` names a build made with another salt: it is not followed, and the
    output folder's own last build still keeps every question's split."""
    texts = [t for t, _, _ in questions(240, seed=43)]
    first = write_episodes(tmp_path / "v1.jsonl", texts[:200], seed=1)
    second = write_episodes(tmp_path / "v2.jsonl", texts, seed=1)

    def config(out: Path, source: Path, salt: str, previous: Path | None = None) -> BuildConfig:
        made = BuildConfig(episodes=(str(source),), out=out, rejects=out.parent / "r.jsonl")
        made = replace(made, split_train=0.34, split_validation=0.33, split_test=0.33)
        made = replace(made, split_salt=salt)
        return replace(made, split_previous=str(previous)) if previous else made

    other, ds = tmp_path / "other" / "dataset", tmp_path / "ds" / "dataset"
    build(config(other, first, "another salt"))
    build(config(ds, first, "ours"))
    v1 = read(ds, "splits").select("question_id", "split")
    report = build(config(ds, second, "ours", previous=other))
    assert report.manifest["splits"]["previous"]["followed"] is False
    now = read(ds, "splits").select("question_id", now="split")
    moved = v1.join(now, on="question_id").filter(pl.col("split") != pl.col("now"))
    assert v1.height == 200 and moved.is_empty(), moved


def test_a_captured_system_prompt_is_decontaminated(tmp_path: Path) -> None:
    """An eval item quoted in an episode's system prompt reaches every config that renders
    it: that episode leaves training like one whose user message quotes it."""
    import random as rnd

    from samples.files import write_jsonl
    from tests.e2e.held_out_data import episode_about

    item = "Which three airlines had the most delayed departures on rainy mornings last winter?"
    texts = [t for t, _, _ in questions(12, seed=9)]
    rng = rnd.Random(2)
    lines = [episode_about(t, rng, i) for i, t in enumerate(texts)]
    lines[0]["conversation_for_sft"] = {
        "system_prompt": f"You answer questions such as: {item}",
        "messages": [
            {"role": "user", "content": texts[0]},
            {"role": "assistant", "content": "The answer is 3."},
        ],
    }
    source = tmp_path / "e.jsonl"
    write_jsonl(source, lines)
    evals = tmp_path / "dev.jsonl"
    evals.write_text(json.dumps({"question": item}) + "\n", encoding="utf-8")
    out = tmp_path / "ds"
    config = BuildConfig(episodes=(str(source),), out=out, rejects=tmp_path / "r.jsonl")
    report = build(replace(config, decontamination_evals=(str(evals),)))
    (found,) = report.manifest["decontamination"]["evals"]
    assert found["matched_episodes"] == 1 and found["matched_items"] == 1
    episode = lines[0]["episode_id"]
    assert episode not in read(out, "sft").get_column("episode_id").to_list()
    assert episode in read(out, "episodes").get_column("episode_id").to_list()
