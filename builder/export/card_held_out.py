"""The card's account of its held-out splits: how questions were grouped and assigned, the
leakage audit, and the eval sets the training configs were decontaminated against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from schemas.vocabulary import (
    BRIDGES_SPLITS,
    GROUP_BY_DATASET,
    GROUP_BY_NEAR_DUPLICATE,
    GROUP_BY_QUESTION,
    GROUP_BY_TEMPLATE,
    HELD_OUT_COPY,
)

_GROUPS = {
    GROUP_BY_NEAR_DUPLICATE: "questions whose word 3-gram Jaccard similarity reaches {t:g} "
    "share a group, transitively (an exact similarity join: no pair above the threshold is "
    "missed)",
    GROUP_BY_DATASET: "the questions about one CSV dataset share a group; a question whose "
    "dataset is unknown joins its near-duplicates (word 3-gram Jaccard ≥ {t:g})",
    GROUP_BY_TEMPLATE: "the questions made from one template share a group; a question whose "
    "template is unknown joins its near-duplicates (word 3-gram Jaccard ≥ {t:g})",
    GROUP_BY_QUESTION: "only questions with the same normalized text share a group",
}


# one definition of a word serves grouping, the audit and decontamination (splits/shingles.py)
_WORDS = (
    "A word is a run of letters, digits and underscores; in scripts written without spaces "
    "(Chinese, Japanese, Thai, Lao, Khmer, Burmese) each character is a word."
)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def assignment_section(split: Mapping[str, Any]) -> list[str]:
    group_by = split.get("group_by", GROUP_BY_QUESTION)
    threshold = split.get("threshold") or 0.5
    groups = split.get("groups") or {}
    ratios = split["ratios"]
    how = (
        "each group's split comes from a salted hash of its key (its smallest text), which "
        "orders the groups; walked in that order with their rows, each goes to the split "
        "whose share it falls in, so every split holds close to its ratio"
        if group_by != GROUP_BY_QUESTION
        else "a question's split is a salted hash of its text against the ratios"
    )
    grouped = _GROUPS[group_by].format(t=threshold)
    lines = [
        "## How splits were assigned",
        "",
        f"Splits are assigned to groups of questions, never to rows: {grouped}. "
        "The text compared is the normalized question text (invisible characters dropped, "
        "NFKC, casefolded, whitespace "
        "collapsed, the secrets it shows replaced), not the id, which includes the hint: the "
        "same question asked with different hints lands in one split, in every config; "
        f"sessions by their initial instruction, the same way. {_WORDS} Then {how}. Ratios: train "
        f"{ratios['train']}, validation {ratios['validation']}, test {ratios['test']}; salt "
        f"`{split['salt']}`.",
        "",
        "A question assigned by an earlier build keeps its split, also after versions without "
        "it (the `splits` config lists such questions with `in_build` false); a new one joins "
        "its group's. A new question that near-copies questions already in two different "
        f"splits is kept out of every training config (`{BRIDGES_SPLITS}`), rather than leak "
        "either way, in this version and every later one.",
    ]
    if groups:
        lines += [
            "",
            f"{groups.get('groups', 0)} groups, the largest {groups.get('largest_group', 0)} "
            f"questions; {groups.get('too_large_groups', 0)} groups "
            f"({groups.get('too_large_questions', 0)} questions) too large to hold out "
            "without unbalancing a held-out split went to train; "
            f"{groups.get('bridges_splits', 0)} questions bridge two splits and are held out "
            "of training.",
        ]
    if split.get("held_out_copies"):
        lines += [
            "",
            f"{split['held_out_copies']} sessions whose later instruction or input holds a "
            f"validation or test question are held out of training (`{HELD_OUT_COPY}`).",
        ]
    if split.get("held_out_copy_episodes"):
        lines += [
            "",
            f"{split['held_out_copy_episodes']} episodes whose prompts (a captured message, "
            "the system message, an execution output, or their question itself) hold a "
            f"validation or test question are held out of training (`{HELD_OUT_COPY}`).",
        ]
    return [*lines, ""]


def audit_section(split: Mapping[str, Any]) -> list[str]:
    audit = split.get("audit")
    if not audit:
        return []
    at = audit["nearest_train_at_least"]
    dataset, template = audit["share_dataset_with_train"], audit["share_template_with_train"]
    lines = [
        "## Held-out integrity",
        "",
        f"Of {audit['held_out_questions']} validation and test questions, the number whose "
        "nearest training question (word 3-gram Jaccard) is at least as similar as:",
        "",
        _table(("≥ 0.5", "≥ 0.7", "≥ 0.9"), [(at["0.5"], at["0.7"], at["0.9"])]),
        "",
        f"{audit.get('one_word_from_train', 0)} have a training question one word apart, "
        f"{audit.get('added_clause_from_train', 0)} one with a clause added or left out. "
        f"{dataset['questions']} of the {dataset['of_known']} held-out questions whose CSV "
        f"dataset is known share it with a training question; {template['questions']} of "
        f"{template['of_known']} with a known template share it.",
    ]
    closest = audit.get("closest") or []
    if closest:
        lines += [
            "",
            "Closest pairs:",
            "",
            _table(
                ("split", "held-out question", "nearest training question", "similarity"),
                [
                    (
                        c["split"],
                        _cell(c["question"]),
                        _cell(c["nearest_train_question"]),
                        f"{c['similarity']:.2f}",
                    )
                    for c in closest[:5]
                ],
            ),
        ]
    return [*lines, ""]


def decontamination_section(found: Mapping[str, Any] | None) -> list[str]:
    if not found:
        return []
    evals = found["evals"]
    removed = found.get("removed_rows") or {}
    lines = [
        "## Decontamination",
        "",
        f"Training prompts (question text, user turns, session instructions) were checked "
        f"against {len(evals)} eval set(s): an eval item counts as matched when more than "
        f"{found['threshold']:.0%} of its word {found['ngram']}-grams occur in one prompt. "
        "Matched rows are left out of every training config and kept in the tables.",
        "",
        _table(
            ("eval set", "items", "matched items", "matched share", "questions", "episodes"),
            [
                (
                    f"`{e['name']}`",
                    e["items"],
                    e["matched_items"],
                    f"{e['matched_share']:.2%}",
                    e["matched_questions"],
                    e["matched_episodes"],
                )
                for e in evals
            ],
        ),
    ]
    if removed:
        names = [e["name"] for e in evals]
        lines += [
            "",
            "Rows removed, by config and eval set:",
            "",
            _table(
                ("config", *names),
                [(f"`{c}`", *(counts.get(n, 0) for n in names)) for c, counts in removed.items()],
            ),
        ]
    return [*lines, ""]


def _cell(text: str) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "…"
