"""TRL's own format checks accept the exported layouts (runs where `trl` is installed)."""

from __future__ import annotations

from typing import Any

import datasets
import pytest

from builder.pipeline import BuildReport

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


# The tool-call part of a current chat template (Qwen2.5's, in short): calls become
# <tool_call> blocks, tool results <tool_response> blocks in a user turn.
TOOL_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}<|im_start|>assistant\n{{ m['content'] or '' }}"
    "{% for call in m['tool_calls'] or [] %}{% set f = call['function'] %}"
    '\n<tool_call>\n{"name": "{{ f["name"] }}", "arguments": {{ f["arguments"] }}}\n</tool_call>'
    "{% endfor %}<|im_end|>\n"
    "{% elif m['role'] == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m['content'] }}"
    "\n</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
)


def test_tool_calls_render_through_a_chat_template(sample_build: BuildReport, tokenizer) -> None:
    import json

    splits = datasets.load_dataset(str(sample_build.out), "sft")
    rows = [r for s in splits.values() for r in s if any(m["tool_calls"] for m in r["messages"])]
    assert rows, "the sample has tool-calling conversations"
    messages = rows[0]["messages"]
    text = tokenizer.apply_chat_template(messages, chat_template=TOOL_TEMPLATE, tokenize=False)
    call = next(m for m in messages if m["tool_calls"])["tool_calls"][0]
    result = next(m for m in messages if m["role"] == "tool")
    assert result["tool_call_id"] == call["id"] and result["name"] == call["function"]["name"]
    code = json.loads(call["function"]["arguments"])["code"]  # arguments: OpenAI's JSON text
    assert f'"name": "{call["function"]["name"]}"' in text and json.dumps({"code": code}) in text
    assert f"<tool_response>\n{result['content']}\n</tool_response>" in text
    assert not any(
        m["role"] == "assistant" and not (m["content"] or m["tool_calls"]) for m in messages
    )


# The rule of the chat templates that refuse anything but user/assistant turns in alternation
# after an optional system message (Llama 2, Mistral, Gemma): the usual Jinja, written here.
ALTERNATING = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% else %}{% set loop_messages = messages %}{% endif %}"
    "{% for m in loop_messages %}"
    "{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
)
CONVERSATIONS = {
    "sft": (("messages",),),
    "sft_turns": (("prompt", "completion"),),
    "orm": (("prompt", "completion"),),
    "dpo": (("prompt", "chosen"), ("prompt", "rejected")),
    "self_correction": (("prompt", "completion"), ("messages",)),
}


@pytest.mark.parametrize("config", sorted(CONVERSATIONS))
def test_every_conversation_alternates_as_strict_chat_templates_require(
    sample_build: BuildReport, tokenizer: Any, config: str
) -> None:
    """Episodes' flat traces (cells with no output between them) and sessions (an input
    after an output) would give two turns of one role in a row; such a row makes those
    templates raise, and the trainer with them. Rows with tool messages are for templates
    that know tools, and are left out."""
    rendered = 0
    for row in datasets.load_dataset(str(sample_build.out), config, split="train"):
        for columns in CONVERSATIONS[config]:
            messages = [m for c in columns for m in row[c]]
            if any(m["role"] == "tool" or m.get("tool_calls") for m in messages):
                continue
            plain = [{"role": m["role"], "content": m["content"]} for m in messages]
            tokenizer.apply_chat_template(plain, chat_template=ALTERNATING, tokenize=False)
            rendered += 1
    assert rendered > 0
