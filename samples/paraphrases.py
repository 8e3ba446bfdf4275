"""Templated questions as capture pipelines write them: templates filled with dataset and
column names, numbers, and paraphrased by synonym swaps. Seeded: the same call gives the
same questions."""

from __future__ import annotations

import random

SYNONYMS = {
    "columns": ("columns", "attributes", "fields", "variables"),
    "rows": ("rows", "records", "entries"),
    "mean": ("mean", "average"),
    "which": ("which", "what"),
    "find": ("find", "identify", "determine"),
}
TEMPLATES = (
    "{which} {columns} in the {ds} dataset have more than {n}% missing values? return as "
    "json with keys: count, columns.",
    "{find} the {mean} of {col} across all {rows} of {ds} where {col2} is above {n}.",
    "how many {rows} in {ds} have a {col} value greater than the {mean} {col}?",
    "list the top {n} {columns} of {ds} ranked by their correlation with {col}.",
    "{find} the median {col} for each {col2} group in {ds}, sorted descending.",
    "in {ds}, {which} {col2} category has the highest total {col}?",
    "compute the standard deviation of {col} in {ds} after removing {rows} with missing {col2}.",
    "does {col} in {ds} differ significantly between the two most common {col2} values? "
    "use a t-test and report the p-value.",
)
DATASETS = tuple(
    f"{a}_{b}"
    for a in ("sales", "titanic", "housing", "weather", "churn", "wine", "census", "traffic")
    for b in ("2019", "2020", "eu", "us", "daily", "clean")
)
COLUMNS = tuple(
    f"{a}_{b}" for a in ("price", "age", "income", "temp", "score", "count") for b in "xyzw"
)


def question(rng: random.Random, template: str | None = None, dataset: str | None = None) -> str:
    words = {k: rng.choice(v) for k, v in SYNONYMS.items()}
    return (template or rng.choice(TEMPLATES)).format(
        ds=dataset or rng.choice(DATASETS),
        col=rng.choice(COLUMNS),
        col2=rng.choice(COLUMNS),
        n=rng.randrange(1, 60),
        **words,
    )


def questions(count: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """``count`` distinct (text, dataset, template name) triples."""
    rng = random.Random(seed)
    seen: dict[str, tuple[str, str, str]] = {}
    while len(seen) < count:
        index = rng.randrange(len(TEMPLATES))
        dataset = rng.choice(DATASETS)
        text = question(rng, TEMPLATES[index], dataset)
        seen.setdefault(text, (text, dataset, f"template_{index}"))
    return list(seen.values())


def paraphrase(text: str, rng: random.Random) -> str:
    """``text`` with one synonym swapped, where it has one."""
    words = text.split(" ")
    spots = [
        (i, group)
        for i, w in enumerate(words)
        for group in SYNONYMS.values()
        if w.strip("?.,:") in group
    ]
    if not spots:
        return text + " please"
    i, group = rng.choice(spots)
    bare = words[i].strip("?.,:")
    words[i] = words[i].replace(bare, rng.choice([g for g in group if g != bare] or [bare]))
    return " ".join(words)
