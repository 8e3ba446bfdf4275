"""Every name the stages and the readers of a build share, defined once: split names, the
split group policies, and the reasons a question is held out of the training configs."""

from __future__ import annotations

SPLITS = ("train", "validation", "test")
HELD_OUT = SPLITS[1:]

# How questions are grouped so that a group never spans two splits ([splits] group_by).
GROUP_BY_NEAR_DUPLICATE = "near_duplicate"
GROUP_BY_DATASET = "dataset"
GROUP_BY_TEMPLATE = "template"
GROUP_BY_QUESTION = "question"
GROUP_POLICIES = (
    GROUP_BY_NEAR_DUPLICATE,
    GROUP_BY_DATASET,
    GROUP_BY_TEMPLATE,
    GROUP_BY_QUESTION,
)

# Why a question's rows are held out of every training config (they stay in the tables).
# A new question near-copying questions already in two different splits: either split
# would leak.
BRIDGES_SPLITS = "bridges_splits"
# Its prompt overlaps an item of a named eval set; the reason is ``eval:<name>``.
EVAL_PREFIX = "eval:"
