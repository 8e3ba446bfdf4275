"""Decontamination reads every text a training config puts in a prompt position, as the
configs render it: a user message of content parts, a captured system or developer message,
and the execution output of an episode trained on its gold turns. Each episode of the build
quotes an eval item in one of those places; with the eval set named, each leaves training."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import polars as pl

from builder.config import BuildConfig
from builder.pipeline import build
from samples.episodes import generate_episode
from samples.files import write_jsonl

PLACES = ("plain", "content_parts", "system", "developer", "gold_output")
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
]


def item(place: str) -> str:
    rng = random.Random(place)
    return " ".join(rng.choice(WORDS) for _ in range(16)) + f" {place}"


def verified(rng: random.Random, index: int, captured: bool) -> dict:
    while True:
        episode = generate_episode(rng, index, form="turns")
        if episode["verified"] and bool(episode.get("conversation_for_sft")) == captured:
            return episode
        index += 1000


def episodes() -> list[dict]:
    rng = random.Random(5)
    out = []
    for i, place in enumerate(PLACES):
        episode = verified(rng, i, captured=place != "gold_output")
        said = item(place)
        if place == "gold_output":  # sft renders the gold turns: their output is a user turn
            execution = episode["teacher_gold_trace"]["turns"][0]["execution"]
            execution["stdout"] = (execution.get("stdout") or "") + "\n" + said
        else:
            messages = episode["conversation_for_sft"]["messages"]
            first = messages[0]["content"]
            if place == "plain":
                messages[0]["content"] = f"{first}\n\n{said}"
            elif place == "content_parts":
                messages[0]["content"] = [
                    {"type": "text", "text": first},
                    {"type": "text", "text": said},
                ]
            else:
                messages.insert(0, {"role": place, "content": said})
        out.append(episode)
    return out


def read(folder: Path, config: str) -> pl.DataFrame:
    """A config's rows, every split (none when every row left training)."""
    files = sorted((folder / config).glob("*.parquet"))
    if not files:
        return pl.DataFrame(schema={"episode_id": pl.String})
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")


def test_an_eval_item_in_any_prompt_position_takes_its_episode_out_of_training(
    tmp_path: Path,
) -> None:
    lines = episodes()
    source = tmp_path / "e.jsonl"
    write_jsonl(source, lines)
    evals = tmp_path / "dev.jsonl"
    evals.write_text("".join(json.dumps({"question": item(p)}) + "\n" for p in PLACES))
    out = tmp_path / "ds"
    config = BuildConfig(episodes=(str(source),), out=out, rejects=tmp_path / "r.jsonl")
    config = replace(config, split_train=1.0, split_validation=0.0, split_test=0.0)
    ids = [e["episode_id"] for e in lines]

    build(config)  # without the eval set, every episode trains
    plain = read(out, "sft")
    assert set(ids) <= set(plain.get_column("episode_id").to_list())
    rows = plain.filter(pl.col("episode_id").is_in(ids)).height

    report = build(replace(config, decontamination_evals=(str(evals),)))
    (found,) = report.manifest["decontamination"]["evals"]
    assert (found["matched_items"], found["matched_episodes"]) == (len(PLACES), len(PLACES))
    assert report.manifest["held_out_rows"]["sft"] == {"eval:dev": rows}
    for config_name in ("sft", "sft_turns", "rl"):
        trained = read(out, config_name).get_column("episode_id").to_list()
        assert not set(ids) & set(trained), config_name
    assert set(ids) <= set(read(out, "episodes").get_column("episode_id").to_list())
