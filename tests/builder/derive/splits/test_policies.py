"""The other group policies, and the audit's figures."""

from __future__ import annotations

import polars as pl

from builder.derive.splits import SplitConfig
from builder.derive.splits.assign import SplitPolicy, assign
from builder.derive.splits.audit import audit
from samples.paraphrases import questions
from tests.builder.derive.splits.test_assign import frame, leaks, no_pins

RATIOS = SplitConfig(0.8, 0.1, 0.1, "policies")


def test_dataset_policy_never_splits_a_dataset_and_counts_fallbacks() -> None:
    items = questions(800, seed=21)
    unknown = {t for t, _, _ in items[::10]}
    data = frame(items).with_columns(
        dataset=pl.when(pl.col("text").is_in(list(unknown))).then(None).otherwise("dataset")
    )
    result = assign(data, no_pins(), SplitPolicy("dataset", 0.5, RATIOS))
    assert result.stats["fell_back_to_near_duplicate"] == len(unknown)
    rows = result.frame.join(data, on="question_id")
    per_dataset = (
        rows.filter(pl.col("dataset").is_not_null())
        .group_by("dataset")
        .agg(pl.col("split").n_unique())
    )
    assert per_dataset.get_column("split").max() == 1
    assert set(rows.get_column("split")) == {"train", "validation", "test"}
    figures = audit(result, data, SplitPolicy("dataset", 0.5, RATIOS))
    assert figures["share_dataset_with_train"]["questions"] == 0


def test_template_policy_keeps_templates_apart() -> None:
    data = frame(questions(800, seed=22))
    result = assign(data, no_pins(), SplitPolicy("template", 0.5, RATIOS))
    rows = result.frame.join(data, on="question_id")
    assert rows.group_by("template").agg(pl.col("split").n_unique()).get_column("split").max() == 1


def test_the_audit_counts_what_a_brute_force_check_counts() -> None:
    data = frame(questions(600, seed=23))
    policy = SplitPolicy("question", 0.5, RATIOS)  # leaks on purpose
    result = assign(data, no_pins(), policy)
    figures = audit(result, data, policy)
    rows = result.frame.join(data, on="question_id")
    leaking = {held for held, _, _ in leaks(rows, 0.5)}
    assert figures["at_or_above_threshold"] == len(leaking) > 0
    assert figures["nearest_train_at_least"]["0.5"] == len(leaking)
    strong = {held for held, _, s in leaks(rows, 0.7)}
    assert figures["nearest_train_at_least"]["0.7"] == len(strong)
    assert sum(b["questions"] for b in figures["histogram"]) == figures["held_out_questions"]
    top = figures["closest"][0]
    assert top["similarity"] == round(max(s for _, _, s in leaks(rows, 0.5)), 4)
