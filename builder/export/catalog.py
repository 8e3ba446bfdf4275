"""What each config of the dataset is for, as the dataset card tells it to its readers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigDoc:
    purpose: str
    layout: str  # which trainer or tool consumes it as is


TABLE_DOCS: dict[str, ConfigDoc] = {
    "questions": ConfigDoc("Every question, from the question banks and from episodes.", "table"),
    "episodes": ConfigDoc(
        "One row per episode: verification flags (captured and recomputed), "
        "triangulation metadata, expected answer, failed integrity checks.",
        "table",
    ),
    "traces": ConfigDoc("The gold trace and each consistency trace of every episode.", "table"),
    "turns": ConfigDoc("Every turn (or code cell, for flat traces) of every trace.", "table"),
    "hooks": ConfigDoc(
        "Every intermediate checkpoint, with its value hash and DAG edges.", "table"
    ),
    "corrections": ConfigDoc("Every self-correction: the failed turn, the fix, the diff.", "table"),
    "messages": ConfigDoc("The captured `conversation_for_sft` messages, one row each.", "table"),
    "sessions": ConfigDoc("Interactive sessions: initial state and verified flag.", "table"),
    "actions": ConfigDoc("Every action of every session, in order.", "table"),
    "splits": ConfigDoc(
        "The split of every question id (and its normalized text), why a question is out of "
        "training if it is, and the earlier versions' questions this one lacks (`in_build` "
        "false), kept so that they return to their split.",
        "table",
    ),
}

OBJECTIVE_DOCS: dict[str, ConfigDoc] = {
    "sft": ConfigDoc(
        "Supervised fine-tuning conversations. Assistant messages carry `weight` "
        "(1 = train, 0 = context only), as OpenAI's fine-tuning format and Axolotl's "
        "`message_field_training` read it; tool calls are kept as OpenAI writes them. TRL's "
        "`SFTTrainer` ignores `weight`: use `sft_turns` with it. A turn's reasoning stays in "
        "its assistant message's `content`, before the code or tool call, not in a separate "
        "`reasoning_content`: current chat templates drop that field from every turn but the "
        "last, which would erase the reasoning of the earlier turns a model trains on.",
        "OpenAI fine-tuning / Axolotl (`messages` with `weight`)",
    ),
    "sft_turns": ConfigDoc(
        "The `sft` conversations as TRL prompt-completion rows: one row per trained (weight "
        "1) assistant message, `prompt` = every message before it. With TRL's default "
        "`completion_only_loss`, no token of a weight-0 message, a tool or execution output, "
        "or the prompt gets a label.",
        "TRL `SFTTrainer` (conversational prompt-completion)",
    ),
    "rl": ConfigDoc(
        "Prompt-only rows for online RL (GRPO-style); the expected answer hash and gold hooks "
        "reach reward functions as keyword columns.",
        "TRL `GRPOTrainer` (conversational `prompt`)",
    ),
    "prm": ConfigDoc(
        "Process-reward samples: one row per hook of every gold trace, verified or not, "
        "without a failed integrity check; labelled 1.0 when the episode is verified "
        "(recomputed), else 0.0.",
        "pointwise step scoring",
    ),
    "prm_stepwise": ConfigDoc(
        "Stepwise supervision: the steps of a trace with one boolean label per step.",
        "stepwise supervision (`prompt`, `completions`, `labels`): Axolotl `stepwise_supervised`",
    ),
    "orm": ConfigDoc(
        "Outcome reward: one row per trace with a boolean label (final answer hash equals "
        "the expected hash). Also TRL's unpaired-preference layout.",
        "TRL `KTOTrainer` / reward modelling (`prompt`, `completion`, `label`)",
    ),
    "dpo": ConfigDoc(
        "Preference pairs: gold vs failed consistency trace, and successful vs failed "
        "consistency trace.",
        "TRL `DPOTrainer` (`prompt`, `chosen`, `rejected`)",
    ),
    "self_correction": ConfigDoc(
        "Error → fix samples: `prompt` ends with the error feedback, `completion` is the fix "
        "(loss on the fix only); `messages` weights the failed attempt 0 and the fix 1.",
        "TRL `SFTTrainer` (prompt-completion) or weighted `messages`",
    ),
}


def doc_for(name: str) -> ConfigDoc:
    return TABLE_DOCS.get(name) or OBJECTIVE_DOCS.get(name) or ConfigDoc("", "")
