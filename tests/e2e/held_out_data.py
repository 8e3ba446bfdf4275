"""Episodes on questions a test chooses: generated episodes whose question is replaced (its
id recomputed), so a build's splits can be checked against known texts."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

from builder.contract.hashing import question_id
from samples.episodes import generate_episode
from samples.files import write_jsonl


def episode_about(text: str, rng: random.Random, index: int) -> dict:
    episode = generate_episode(rng, index, form="turns")
    old = episode["question"]["question_text"]
    question = episode["question"]
    question["question_text"] = text
    question["id"] = question_id(text, question.get("hint"))
    for message in (episode.get("conversation_for_sft") or {}).get("messages", []):
        if isinstance(message.get("content"), str):
            message["content"] = message["content"].replace(old, text)
    return episode


def write_episodes(path: Path, texts: Iterable[str], seed: int) -> Path:
    rng = random.Random(seed)
    write_jsonl(path, (episode_about(t, rng, i) for i, t in enumerate(texts)))
    return path
