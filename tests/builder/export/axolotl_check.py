"""Axolotl's own dataset preparation of a build's configs, by the configs its card shows.

Run by ``test_axolotl_recipes.py`` in Axolotl's own venv (``make test`` makes it: Axolotl pins
other releases of ``datasets`` and ``transformers`` than the project's):

    python axolotl_check.py DATASET WORK RECIPE.yaml...

Prints one JSON object: per config, its train rows, the rows Axolotl prepared and every
row whose tokens disagree with the row (the first few).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SHOWN = 5
# A template Axolotl cannot tell uses tool calls (its loop variable is not ``message``): the
# card's mapping must bring them (without it they are dropped silently)
TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] or '' }}"
    "{% if m['tool_calls'] %} {{ m['tool_calls'] | tojson }}{% endif %} <|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def main(dataset: str, work: Path, recipes: list[Path]) -> dict[str, Any]:
    import yaml
    from axolotl.cli.config import load_cfg
    from axolotl.common.datasets import load_datasets
    from axolotl.utils.dict import DictDefault
    from datasets import load_dataset

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_lm import tiny_llama, word_tokenizer

    rows = {name: load_dataset(dataset, name, split="train") for name in ("sft", "prm_stepwise")}
    texts = [m["content"] or "" for r in rows["sft"] for m in r["messages"]]
    texts += [json.dumps(m["tool_calls"]) for r in rows["sft"] for m in r["messages"]]
    texts += [s for r in rows["prm_stepwise"] for s in [r["prompt"], *r["completions"]]]
    tokenizer = word_tokenizer(texts, TEMPLATE)
    model = work / "tiny-model"
    tiny_llama(tokenizer).save_pretrained(model)
    tokenizer.save_pretrained(model)
    report: dict[str, Any] = {}
    for recipe in recipes:
        cfg = yaml.safe_load(recipe.read_text(encoding="utf-8"))
        (entry,) = cfg["datasets"]
        entry["path"] = dataset  # the values a user replaces, as the card says
        cfg |= {
            "base_model": str(model),
            "sequence_len": 32768,
            "val_set_size": 0,
            "micro_batch_size": 1,
            "num_epochs": 1,
            "learning_rate": 1e-4,
            "dataset_num_proc": 1,
            "shuffle_merged_datasets": False,
            "bf16": False,
            "fp16": False,
            "output_dir": str(work / f"out-{entry['name']}"),
            "dataset_prepared_path": str(work / f"prepared-{entry['name']}"),
        }
        prepared = load_datasets(cfg=load_cfg(DictDefault(cfg))).train_dataset
        ours = rows[entry["name"]]
        check = _sft if entry["name"] == "sft" else _stepwise
        bad = [
            i
            for i, (r, o) in enumerate(zip(ours, prepared, strict=False))
            if not check(r, o, tokenizer)
        ]
        report[entry["name"]] = {
            "rows": len(ours),
            "prepared": len(prepared),
            "bad": bad[:SHOWN],
            "n_bad": len(bad),
        }
    return report


def _sft(row: dict[str, Any], out: dict[str, Any], tokenizer: Any) -> bool:
    """Every weight-1 assistant message is trained, and no other token: each run of
    trained tokens starts with one such message's words, in order."""
    runs, run = [], []
    for token, label in zip(out["input_ids"], out["labels"], strict=True):
        if label != -100:
            run.append(token)
        elif run:
            runs, run = [*runs, run], []
    runs += [run] if run else []
    trained = [m for m in row["messages"] if m["role"] == "assistant" and m["weight"] == 1]
    if len(runs) != len(trained):
        return False
    for tokens, message in zip(runs, trained, strict=True):
        # the last word may merge with the template's end of turn
        words = tokenizer.encode(message["content"] or "", add_special_tokens=False)[:-1]
        if tokens[: len(words)] != words:
            return False
    calls = [c["function"]["name"] for m in row["messages"] for c in m["tool_calls"] or []]
    text = tokenizer.decode(out["input_ids"])
    return all(name in text for name in calls)  # tool calls reach the template


def _stepwise(row: dict[str, Any], out: dict[str, Any], tokenizer: Any) -> bool:
    """One label per step, on its last token, as the row's labels."""
    return [label for label in out["labels"] if label != -100] == [int(x) for x in row["labels"]]


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(args[0], Path(args[1]), [Path(a) for a in args[2:]])))
