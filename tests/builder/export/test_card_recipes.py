"""The card's training recipes run in the trainers they name: the code blocks of a generated
card, exactly as written, one step each on CPU with a tiny local model. Only the setup
block's values (dataset, model, trainer arguments) are replaced, as a user would."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from builder.export.recipes import RECIPES, SETUP
from builder.pipeline import BuildReport
from tests.builder.export.tiny_lm import tiny_llama, word_tokenizer

pytest.importorskip("trl", reason="TRL not installed: `make test` installs it (extra 'trl')")

TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] or '' }} <|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def card_blocks(card: str) -> dict[str, str]:
    """``{"setup" | recipe name: code}`` of the card's recipe section, in card order (the
    headings name configs, which may repeat: a config can have two trainers)."""
    section = card.split("## Training recipes", 1)[1].split("\n## ", 1)[0]
    configs = re.findall(r"^### `(\w+)`", section, flags=re.M)
    codes = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert configs == [r.config for r in RECIPES.values()]
    assert len(codes) == len(configs) + 1
    return dict(zip(["setup", *RECIPES], codes, strict=True))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, sample_build: BuildReport) -> Path:
    """A 1-layer Llama with a word-level tokenizer trained on the sample's text."""
    import pyarrow.parquet as pq

    texts = []
    for config in ("sft", "dpo"):
        for row in pq.read_table(sample_build.out / config).to_pylist():
            for column in ("messages", "prompt", "chosen", "rejected"):
                texts += [m["content"] or "" for m in row.get(column) or []]
    tokenizer = word_tokenizer(texts, TEMPLATE)
    folder = tmp_path_factory.mktemp("tiny-model")
    tiny_llama(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_card_shows_the_setup_and_every_recipe(sample_build: BuildReport) -> None:
    blocks = card_blocks((sample_build.out / "README.md").read_text())
    assert list(blocks) == ["setup", *RECIPES]
    assert blocks["setup"] == SETUP.format(dataset="example-org/agent-traces-sample")
    for name, recipe in RECIPES.items():
        assert blocks[name] == recipe.code


@pytest.mark.parametrize("config", list(RECIPES))
def test_recipe_runs_one_step(
    config: str, sample_build: BuildReport, tiny_model: Path, tmp_path: Path, monkeypatch
) -> None:
    blocks = card_blocks((sample_build.out / "README.md").read_text())
    namespace: dict[str, Any] = {}
    exec(blocks["setup"], namespace)  # the card's setup, then a user's own values
    namespace["DATASET"] = str(sample_build.out)
    namespace["MODEL"] = str(tiny_model)
    namespace["ARGS"] = namespace["ARGS"] | {
        "output_dir": str(tmp_path / "out"),
        "use_cpu": True,
        "bf16": False,
        "save_strategy": "no",
    }
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(os.environ, "WANDB_DISABLED", "true")
    exec(blocks[config], namespace)
    if config == "sft":
        lines = (tmp_path / "sft.openai.jsonl").read_text().splitlines()
        assert lines and all(json.loads(line)["messages"] for line in lines)
        return
    history = namespace["trainer"].state.log_history
    loss = next(entry["train_loss"] for entry in history if "train_loss" in entry)
    assert math.isfinite(loss)
