"""Decontamination: training rows whose prompt overlaps an item of a named eval set are held
out of every training config (they stay in the tables, flagged with the eval's name).

The rule is the one Tulu 3 and OLMo use for prompts: an eval item is matched by a training
prompt when more than ``threshold`` of the item's word ``ngram``-grams occur in that one
prompt (an item of fewer words than ``ngram`` is one n-gram of all its words). Prompts
are a question's text, an episode's user messages and captured system prompt, and what a
session says (its instruction, its later ``set_instruction`` and ``input`` actions).
"""

from builder.derive.decontamination.evals import EvalSet, load_evals, parse_eval_spec
from builder.derive.decontamination.overlap import Contamination, decontaminate

__all__ = ["Contamination", "EvalSet", "decontaminate", "load_evals", "parse_eval_spec"]
