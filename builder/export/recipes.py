"""Training recipes for the dataset card: one runnable code block per trainer a config names.

The card shows ``SETUP`` (the dataset, a model, trainer arguments: the values a user
changes) and then each config's block as written here. ``tests/builder/export/
test_card_recipes.py`` runs exactly the blocks of a generated card, with a tiny local model
on CPU in place of ``SETUP``'s values, so a block that stops working breaks a test.
"""

from __future__ import annotations

from dataclasses import dataclass

TESTED_WITH = "TRL 1.16 (transformers 5.24, datasets 5.x)"

SETUP = """\
from datasets import load_dataset

DATASET = "{dataset}"  # this dataset on the Hub, or the folder it was built into
REVISION = None  # on the Hub, pin a release: its tag, such as "v1.2.0" (None: the latest)
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"  # any chat model with a chat template
ARGS = dict(output_dir="out", max_steps=1, per_device_train_batch_size=2, report_to="none")
"""


@dataclass(frozen=True)
class Recipe:
    config: str  # the config it loads
    trainer: str  # what the block runs, as the card names it
    keep: str  # the columns the trainer takes
    meaning: str  # what a label or reward means, in one sentence
    code: str


RECIPES: dict[str, Recipe] = {
    "sft": Recipe(
        "sft",
        "OpenAI fine-tuning file (per-message `weight`; Axolotl reads the same)",
        "`messages` (null fields dropped)",
        "`weight` 1 trains an assistant message, 0 keeps it as context only.",
        """\
import json

rows = load_dataset(DATASET, "sft", split="train", revision=REVISION)
with open("sft.openai.jsonl", "w") as f:
    for row in rows:
        messages = [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]
        f.write(json.dumps({"messages": messages}) + "\\n")
""",
    ),
    "sft_turns": Recipe(
        "sft_turns",
        "TRL `SFTTrainer`",
        "`prompt`, `completion`",
        "the loss is on the completion only (TRL's default for prompt-completion rows).",
        """\
from trl import SFTConfig, SFTTrainer

train = load_dataset(DATASET, "sft_turns", split="train", revision=REVISION)
train = train.select_columns(["prompt", "completion"])
trainer = SFTTrainer(model=MODEL, args=SFTConfig(**ARGS), train_dataset=train)
trainer.train()
""",
    ),
    "self_correction": Recipe(
        "self_correction",
        "TRL `SFTTrainer`",
        "`prompt`, `completion`",
        "the completion is the fix of the error the prompt ends with.",
        """\
from trl import SFTConfig, SFTTrainer

train = load_dataset(DATASET, "self_correction", split="train", revision=REVISION)
train = train.select_columns(["prompt", "completion"])
trainer = SFTTrainer(model=MODEL, args=SFTConfig(**ARGS), train_dataset=train)
trainer.train()
""",
    ),
    "dpo": Recipe(
        "dpo",
        "TRL `DPOTrainer`",
        "`prompt`, `chosen`, `rejected`",
        "`chosen` reached the expected answer, `rejected` did not.",
        """\
from trl import DPOConfig, DPOTrainer

train = load_dataset(DATASET, "dpo", split="train", revision=REVISION)
train = train.select_columns(["prompt", "chosen", "rejected"])
trainer = DPOTrainer(model=MODEL, args=DPOConfig(**ARGS), train_dataset=train)
trainer.train()
""",
    ),
    "dpo_reward_model": Recipe(
        "dpo",
        "TRL `RewardTrainer` (a reward model from the preference pairs)",
        "`prompt`, `chosen`, `rejected`",
        "the model learns to score `chosen` above `rejected`; `orm`'s unpaired labels are not "
        "RewardTrainer's layout (it needs pairs), so its reward model trains on `dpo`.",
        """\
from trl import RewardConfig, RewardTrainer

train = load_dataset(DATASET, "dpo", split="train", revision=REVISION)
train = train.select_columns(["prompt", "chosen", "rejected"])
trainer = RewardTrainer(model=MODEL, args=RewardConfig(**ARGS), train_dataset=train)
trainer.train()
""",
    ),
    "orm": Recipe(
        "orm",
        "TRL `KTOTrainer` (unpaired preferences)",
        "`prompt`, `completion`, `label`",
        "`label` is true when the trace's final answer is the expected one (by hash, or by value"
        " within the build's `answer_tolerance`).",
        """\
from trl import KTOConfig, KTOTrainer

train = load_dataset(DATASET, "orm", split="train", revision=REVISION)
train = train.select_columns(["prompt", "completion", "label"])
trainer = KTOTrainer(model=MODEL, args=KTOConfig(**ARGS), train_dataset=train)
trainer.train()
""",
    ),
    "rl": Recipe(
        "rl",
        "TRL `GRPOTrainer` with the reward functions of `builder.contract.rewards`",
        "every column (they reach the reward functions as keyword arguments)",
        "the outcome reward is 1.0 when the submitted answer hashes (with the row's "
        "`hash_precision`) to one of `accepted_answer_hashes` (the expected hash, and any "
        "other answer the question accepts), else 0.0.",
        """\
from trl import GRPOConfig, GRPOTrainer

from builder.contract.rewards import make_outcome_reward


def run(completion, csv_source):
    \"\"\"Yours: run the completion's code in your sandbox against the row's data file
    (`csv_source`, as captured) and return {"answer": the submitted value}; {} when nothing
    was submitted. The builder's examples/executor.py is a reference (time and memory
    limits; not a security sandbox).\"\"\"
    return {}


train = load_dataset(DATASET, "rl", split="train", revision=REVISION)
args = GRPOConfig(**ARGS, num_generations=2, max_completion_length=16)
reward = make_outcome_reward(run)
trainer = GRPOTrainer(model=MODEL, reward_funcs=[reward], args=args, train_dataset=train)
trainer.train()
""",
    ),
}


AXOLOTL_TESTED_WITH = "Axolotl 0.19"
# Axolotl's config per config it reads; the test suite prepares the sample's rows with each
# (``tests/builder/export/test_axolotl_recipes.py``). Tool calls reach the template only when
# mapped: without the mapping, a template Axolotl does not see use them loses them silently.
AXOLOTL: dict[str, str] = {
    "sft": """\
base_model: Qwen/Qwen2.5-0.5B-Instruct
chat_template: tokenizer_default
datasets:
  - path: {dataset}
    name: sft
    split: train
    type: chat_template
    field_messages: messages
    message_field_training: weight
    message_property_mappings:
      role: role
      content: content
      tool_calls: tool_calls
      tool_call_id: tool_call_id
      name: name
""",
    "prm_stepwise": """\
base_model: Qwen/Qwen2.5-0.5B-Instruct
process_reward_model: true
datasets:
  - path: {dataset}
    name: prm_stepwise
    split: train
    type: stepwise_supervised
""",
}


def axolotl_section(dataset: str, configs: set[str] | None = None) -> list[str]:
    """Axolotl's configs for the configs of ``configs`` it reads (None: all)."""
    chosen = [name for name in AXOLOTL if configs is None or name in configs]
    if not chosen:
        return []
    parts = [
        "### Axolotl",
        "",
        f"The dataset part of an Axolotl config (tested with {AXOLOTL_TESTED_WITH}: its own "
        "dataset preparation of this build's rows). In `sft`, an assistant message of "
        "`weight` 0 gets no loss; in `prm_stepwise`, each step's label sits on its last token. "
        "Add your training settings (`sequence_len`, `micro_batch_size`, `num_epochs`, "
        "`learning_rate`, …; without a GPU `bf16: false`); pin a release with `revision:` "
        "under the dataset.",
        "",
    ]
    for name in chosen:
        parts += [f"`{name}`:", "", "```yaml", AXOLOTL[name].format(dataset=dataset).rstrip()]
        parts += ["```", ""]
    return parts


def recipes_section(dataset: str, configs: set[str] | None = None) -> list[str]:
    """The card's recipe section: the setup, then one block per config of ``configs`` (the
    configs with train rows, which every block loads: ``datasets`` cannot load a split
    without rows; None: all)."""
    parts = [
        "## Training recipes",
        "",
        f"Each block below runs as written after this setup (tested with {TESTED_WITH}, one "
        "step with a tiny model; on a machine without a GPU, add `use_cpu=True, bf16=False` "
        "to `ARGS`, as the test does). `prm_stepwise` is the stepwise-supervision layout "
        "(`prompt`, `completions`, `labels`) that Axolotl's `stepwise_supervised` type reads "
        "(below). `prm` is for pointwise step scorers.",
        "",
        "Tool calls keep OpenAI's layout: `function.arguments` is JSON text. A chat template "
        "that writes arguments with `tojson` (Qwen2.5's, Llama 3.1's) would write that text "
        "as a quoted string; for such a model, `json.loads` the arguments of every tool call "
        "in `prompt` and `completion` (a `map` before the trainer) so they render as objects.",
        "",
        "```python",
        SETUP.format(dataset=dataset).rstrip(),
        "```",
        "",
    ]
    absent = [r.config for r in RECIPES.values() if configs is not None and r.config not in configs]
    for recipe in RECIPES.values():
        if recipe.config in absent:
            continue
        parts += [
            f"### `{recipe.config}` → {recipe.trainer}",
            "",
            f"Keep {recipe.keep}; {recipe.meaning}",
            "",
            "```python",
            recipe.code.rstrip(),
            "```",
            "",
        ]
    if absent:
        names = ", ".join(f"`{name}`" for name in dict.fromkeys(absent))
        parts += [f"No recipe for {names}: this build has no train rows there.", ""]
    return parts + axolotl_section(dataset, configs)
