"""``sft_turns`` through TRL's own ``SFTTrainer`` data preparation and collator, with TRL's
defaults: only the completion (a weight-1 assistant message) gets labels; no token of a
weight-0 message, a tool or execution output, or the prompt does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import pytest

from builder.pipeline import BuildReport
from tests.builder.export.tiny_lm import tiny_llama, word_tokenizer

trl = pytest.importorskip("trl", reason="TRL not installed: `make test` installs it (extra 'trl')")

TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] or '' }}"
    "{% for c in m['tool_calls'] or [] %} <call> {{ c['function']['arguments'] }}{% endfor %}"
    " <|end|>\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def words(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def contains(haystack: list[int], needle: list[int]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


@pytest.fixture(scope="module")
def rows(sample_build: BuildReport) -> datasets.Dataset:
    return datasets.load_dataset(str(sample_build.out), "sft_turns", split="train")


@pytest.fixture(scope="module")
def tokenizer(rows: datasets.Dataset) -> Any:
    """A word-level tokenizer trained on the rows themselves: every word its own id."""
    texts = [m["content"] or "" for r in rows for m in (*r["prompt"], *r["completion"])]
    texts += [
        c["function"]["arguments"] for r in rows for c in r["completion"][0]["tool_calls"] or []
    ]
    return word_tokenizer(texts, TEMPLATE)


def test_only_the_trained_message_gets_labels(rows, tokenizer, tmp_path: Path) -> None:
    # The rows with context that must not train: weight-0 attempts and tool outputs.
    picked = [
        i
        for i, r in enumerate(rows)
        if any(m["weight"] == 0 or m["role"] == "tool" for m in r["prompt"])
    ][:8]
    assert picked
    subset = rows.select(picked).select_columns(["prompt", "completion"])
    args = trl.SFTConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        report_to=[],
        use_cpu=True,
        bf16=False,
    )
    trainer = trl.SFTTrainer(
        model=tiny_llama(tokenizer),
        args=args,
        train_dataset=subset,
        processing_class=tokenizer,
    )
    assert args.completion_only_loss is None  # TRL's default: on for prompt-completion data
    for i, example in enumerate(trainer.train_dataset):
        batch = trainer.data_collator([example])
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        trained = [t for t, label in zip(ids, labels, strict=True) if label != -100]
        completion = subset[i]["completion"][0]
        assert completion["role"] == "assistant" and completion["weight"] == 1
        if completion["content"]:
            assert contains(trained, words(tokenizer, completion["content"]))
        for call in completion["tool_calls"] or []:
            assert contains(trained, words(tokenizer, call["function"]["arguments"]))
        answer = words(tokenizer, completion["content"] or "")
        for message in subset[i]["prompt"]:
            said = words(tokenizer, message["content"] or "")
            # long enough not to recur by chance, and not repeated by the completion itself (a
            # fix that keeps the failed attempt's lines): then only labels can tell them apart
            if len(said) >= 3 and not contains(answer, said):
                assert not contains(trained, said), message["role"]
    loss = trainer.train().training_loss
    assert loss == loss and loss > 0  # one real step, finite
