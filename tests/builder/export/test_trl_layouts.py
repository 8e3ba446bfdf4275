"""TRL's own format checks accept the exported layouts (runs where `trl` is installed)."""

from __future__ import annotations

from typing import Any

import datasets
import pytest

from builder.build import BuildReport

trl_data_utils = pytest.importorskip(
    "trl.data_utils", reason="TRL not installed: `make test` installs it (extra 'trl')"
)

TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """A word-level tokenizer with an inline chat template: no Hub download."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]")
    tok.chat_template = TEMPLATE
    return tok


def first_row(build: BuildReport, config: str) -> dict[str, Any]:
    return datasets.load_dataset(str(build.out), config, split="train")[0]


@pytest.mark.parametrize("config", ["sft", "dpo", "orm", "self_correction", "rl"])
def test_rows_are_conversational(sample_build: BuildReport, config: str) -> None:
    assert trl_data_utils.is_conversational(first_row(sample_build, config))


def test_sft_renders_every_message(sample_build: BuildReport, tokenizer: Any) -> None:
    row = first_row(sample_build, "sft")
    text = trl_data_utils.apply_chat_template({"messages": row["messages"]}, tokenizer)["text"]
    for message in row["messages"]:
        assert f"<|{message['role']}|>{message['content']}" in text


def test_dpo_renders_prompt_chosen_rejected(sample_build: BuildReport, tokenizer: Any) -> None:
    row = first_row(sample_build, "dpo")
    example = {k: row[k] for k in ("prompt", "chosen", "rejected")}
    out = trl_data_utils.apply_chat_template(example, tokenizer)
    assert out["prompt"].endswith("<|assistant|>")
    assert out["chosen"] != out["rejected"]
    assert row["chosen"][0]["content"] in out["chosen"]


def test_orm_is_the_unpaired_preference_layout(sample_build: BuildReport, tokenizer: Any) -> None:
    row = first_row(sample_build, "orm")
    example = {"prompt": row["prompt"], "completion": row["completion"], "label": row["label"]}
    out = trl_data_utils.apply_chat_template(example, tokenizer)
    assert out["label"] is row["label"]
    assert row["completion"][-1]["content"] in out["completion"]
