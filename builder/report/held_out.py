"""The report's held-out integrity section: the leakage audit's histogram of nearest-train
similarities, its counts and closest pairs, and the decontamination tables, all read from
the manifest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builder.report import charts
from builder.report.html import Node, Raw, el, num, table


def _figure(name: str, fig: Any, caption: str) -> Raw:
    return el(
        "figure",
        Raw(charts.to_svg(fig, name)),
        el("figcaption", caption),
        class_="chart",
        data_chart=name,
    )


def _audit(audit: Mapping[str, Any]) -> list[Node]:
    threshold = audit["threshold"]
    leaking = audit["at_or_above_threshold"]
    one_word = audit.get("one_word_from_train", 0)
    clause = audit.get("added_clause_from_train", 0)
    at = audit["nearest_train_at_least"]
    bins = {
        f"{b['from']:.1f}–{b['to']:.1f}" if b["from"] else f"<{b['to']:.1f}": b["questions"]
        for b in audit["histogram"]
    }
    closest = table(
        ("split", "held-out question", "nearest training question", "similarity"),
        [
            (c["split"], c["question"], c["nearest_train_question"], f"{c['similarity']:.3f}")
            for c in audit.get("closest") or []
        ],
    )
    dataset, template = audit["share_dataset_with_train"], audit["share_template_with_train"]
    return [
        el(
            "p",
            el(
                "span",
                "held out" if not (leaking or one_word) else "NEAR-COPIES",
                class_="ok" if not (leaking or one_word) else "bad",
            ),
            f": of {audit['held_out_questions']:,} validation and test questions, ",
            el("b", leaking, data_metric="held_out.at_or_above_threshold", data_value=leaking),
            f" have a training question at or above similarity {threshold:g} (group policy "
            f"{audit['group_by']}); at ≥ 0.5 / 0.7 / 0.9: ",
            num(at["0.5"], "held_out.nearest_at_least_0.5"),
            " / ",
            num(at["0.7"], "held_out.nearest_at_least_0.7"),
            " / ",
            num(at["0.9"], "held_out.nearest_at_least_0.9"),
            "; one word from a training question: ",
            num(one_word, "held_out.one_word_from_train"),
            "; a training question with a clause added or left out: ",
            num(clause, "held_out.added_clause_from_train"),
            f". Sharing a CSV dataset with train: {dataset['questions']} of "
            f"{dataset['of_known']} known; a template: {template['questions']} of "
            f"{template['of_known']} known.",
        ),
        _figure(
            "held-out-similarity",
            charts.columns(
                "Nearest training question, by similarity",
                bins,
                "word 3-gram Jaccard",
                "held-out questions",
                width=6.0,
            ),
            f"Below {audit['report_floor']:g} no similarity is measured.",
        ),
        el("h3", "Closest pairs"),
        closest,
    ]


def _decontamination(found: Mapping[str, Any]) -> list[Node]:
    evals = found["evals"]
    names = [e["name"] for e in evals]
    removed = found.get("removed_rows") or {}
    return [
        el("h3", "Decontamination"),
        el(
            "p",
            f"An eval item is matched when more than {found['threshold']:.0%} of its word "
            f"{found['ngram']}-grams occur in one training prompt; matched rows are left out "
            "of every training config.",
        ),
        table(
            ("eval set", "items", "matched items", "matched share", "questions", "episodes"),
            [
                (
                    e["name"],
                    num(e["items"], f"decontamination.{e['name']}.items"),
                    num(e["matched_items"], f"decontamination.{e['name']}.matched_items"),
                    f"{e['matched_share']:.2%}",
                    e["matched_questions"],
                    e["matched_episodes"],
                )
                for e in evals
            ],
        ),
        table(
            ("config", *names),
            [
                (el("td", config, class_="mono"), *(counts.get(n, 0) for n in names))
                for config, counts in removed.items()
            ],
        ),
        el("h3", "Most matched eval items"),
        table(
            ("eval set", "item", "text", "prompts"),
            [(m["eval"], m["item"], m["text"], m["prompts"]) for m in found["most_matched"]],
        ),
    ]


def held_out_section(manifest: Mapping[str, Any]) -> Raw | None:
    audit = (manifest.get("splits") or {}).get("audit")
    found = manifest.get("decontamination")
    if not audit and not found:
        return None
    body: list[Node] = [
        *(_audit(audit) if audit else []),
        *(_decontamination(found) if found else []),
    ]
    return el("section", el("h2", "Held-out integrity"), body, id="held-out")
