"""A tiny causal LM and a word-level tokenizer, built offline, for running trainers on CPU."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def word_tokenizer(texts: Iterable[str], chat_template: str) -> Any:
    """A tokenizer whose vocabulary is every word of ``texts`` (and of the template)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["[UNK]", "[PAD]", "[EOS]"]
    core.train_from_iterator(
        [*texts, chat_template], trainers.WordLevelTrainer(special_tokens=specials)
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]"
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def tiny_llama(tokenizer: Any) -> Any:
    """A one-layer Llama, 16 wide, over ``tokenizer``'s vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)
