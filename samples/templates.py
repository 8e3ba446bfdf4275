"""The question templates: each draws its parameters, writes the question text, its hints
and difficulty, the solution steps after the load, the answer and plausible wrong final
steps (``Built``). Weighted so easy questions are the bulk of a question bank."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from samples.datasets import Dataset
from samples.steps import (
    Built,
    distinct_values,
    final_variants,
    frame_value,
    fuzz,
    grouped_value,
    load_step,
    make_step,
    other_than,
    series_out,
    series_value,
    slug,
    typical,
)


def _t_mean_filtered(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    num, cat = rng.choice(ds.of_kind("float", "int")), rng.choice(ds.of_kind("cat"))
    val = rng.choice(cat.levels)
    text = rng.choice(
        (
            f"What is the mean {num.name} of {ds.entity} whose {cat.name} is '{val}'? "
            "Round to 2 decimal places.",
            f"What is the average {num.name} for {ds.entity} with {cat.name} equal to '{val}', "
            "rounded to 2 decimals?",
        )
    )
    hint = f"Filter df[df['{cat.name}'] == '{val}'] first, then average '{num.name}'."
    alt = f"Only rows with {cat.name} == '{val}' count; round the mean with round(x, 2)."
    sub, var = f"{slug(cat.name)}_{slug(val)}", f"mean_{slug(num.name)}"
    rows = r.randint(ds.rows // 8, ds.rows * 2 // 3)
    code = f"{sub} = df[df['{cat.name}'] == '{val}']"
    frame, full = frame_value(ds, r, rows, code, fixed={cat.name: val})
    ans = typical(num, r)
    steps = [
        make_step(
            code,
            sub,
            f"{ds.entity} with {cat.name} == {val!r}",
            ["df"],
            frame,
            f"Keep only the {ds.entity} whose {cat.name} is '{val}'.",
            full=full,
            show=f"print({sub}.shape)",
            out=f"({rows}, {len(ds.columns)})",
        ),
        make_step(
            f"{var} = round({sub}['{num.name}'].mean(), 2)",
            var,
            f"Mean {num.name}",
            [sub],
            ans,
            f"Now the mean {num.name}, rounded to 2 decimals.",
        ),
    ]
    overall = round(ans + fuzz(0, r, max(1.0, abs(ans) * 0.3)), 2)
    wrong = [
        (f"{var} = round(df['{num.name}'].mean(), 2)", ["df"], overall),
        (f"{var} = {sub}['{num.name}'].mean()", [sub], fuzz(ans, r, 0.01)),
    ]
    return text, hint, alt, "EASY", steps, ans, final_variants(steps, wrong)


def _t_count_above(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    num = rng.choice(ds.of_kind("float", "int"))
    raw = num.low + rng.uniform(0.3, 0.7) * (num.high - num.low)
    thr = round(raw, 1) if num.high - num.low < 20 else int(raw)
    text = f"How many {ds.entity} have a {num.name} greater than {thr}?"
    hint = f"Build a boolean mask df['{num.name}'] > {thr} and count the True values."
    alt = f"Strictly greater than {thr}; return the count as an integer."
    ans = r.randint(ds.rows // 10, ds.rows * 3 // 5)
    mask_full = {"name": num.name, "length": ds.rows, "true_count": ans, "threshold": thr}
    mask = {
        "type": "Series",
        "name": num.name,
        "dtype": "bool",
        "length": ds.rows,
        "head": [r.random() < 0.5 for _ in range(3)],
        "value_counts": {"True": ans, "False": ds.rows - ans},
    }
    steps = [
        make_step(
            f"mask = df['{num.name}'] > {thr}",
            "mask",
            f"{num.name} above {thr}",
            ["df"],
            mask,
            f"Mask the rows with {num.name} above {thr}.",
            full=mask_full,
            show="print(mask.sum())",
            out=str(ans),
        ),
        make_step(
            "n_above = int(mask.sum())",
            "n_above",
            "Count of matching rows",
            ["mask"],
            ans,
            "Count them as a plain int.",
        ),
    ]
    wrong = [
        ("n_above = str(mask.sum())", ["mask"], str(ans)),
        (f"n_above = int((df['{num.name}'] >= {thr}).sum())", ["df"], ans + r.randint(1, 12)),
    ]
    return text, hint, alt, "EASY", steps, ans, final_variants(steps, wrong)


def _t_best_group(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    cat, num = rng.choice(ds.of_kind("cat")), rng.choice(ds.of_kind("float", "int"))
    text = f"Which {cat.name} has the highest average {num.name}?"
    hint = f"Group by '{cat.name}', take the mean of '{num.name}', then idxmax()."
    alt = f"Compare mean {num.name} per {cat.name}; answer with the {cat.name} label."
    var, best = f"avg_by_{slug(cat.name)}", f"best_{slug(cat.name)}"
    means = distinct_values(num, r, len(cat.levels))
    ans = cat.levels[means.index(max(means))]
    steps = [
        grouped_value(
            f"{var} = df.groupby('{cat.name}')['{num.name}'].mean()",
            var,
            cat,
            num,
            means,
            f"Mean {num.name} per {cat.name}",
            f"Average {num.name} per {cat.name}.",
        ),
        make_step(
            f"{best} = {var}.idxmax()",
            best,
            f"{cat.name} with the highest mean",
            [var],
            ans,
            "Pick the group with the largest mean.",
        ),
    ]
    wrong = [
        (f"{best} = {var}.idxmin()", [var], cat.levels[means.index(min(means))]),
        (
            f"{best} = df.groupby('{cat.name}')['{num.name}'].sum().idxmax()",
            ["df"],
            other_than(r, cat.levels, ans),
        ),
    ]
    return text, hint, alt, "MEDIUM", steps, ans, final_variants(steps, wrong)


def _t_top_k(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    cat, num = rng.choice(ds.of_kind("cat")), rng.choice(ds.of_kind("float", "int"))
    k = 3 if len(cat.levels) >= 4 else len(cat.levels) - 1
    text = f"List the top {k} {cat.name} values by total {num.name}, highest first."
    hint = f"groupby('{cat.name}')['{num.name}'].sum(), sort descending, take the first {k}."
    alt = f"Return a list of {k} {cat.name} labels ordered by total {num.name}."
    sums = sorted(
        (round(v * ds.rows / len(cat.levels), 2) for v in distinct_values(num, r, len(cat.levels))),
        reverse=True,
    )
    order = list(cat.levels)
    r.shuffle(order)
    code = f"totals = df.groupby('{cat.name}')['{num.name}'].sum().sort_values(ascending=False)"
    value = series_value(num.name, order, sums, "float64")
    ans = order[:k]
    steps = [
        make_step(
            code,
            "totals",
            f"Total {num.name} per {cat.name}, descending",
            ["df"],
            value,
            f"Total {num.name} per {cat.name}, largest first.",
            full={"name": num.name, "values": sums},
            out=series_out(cat.name, order, sums, num.name, "float64"),
        ),
        make_step(
            f"top_{k} = totals.head({k}).index.tolist()",
            f"top_{k}",
            f"Top {k} labels",
            ["totals"],
            ans,
            f"The first {k} labels are the answer.",
        ),
    ]
    wrong = [
        (f"top_{k} = totals.tail({k}).index.tolist()", ["totals"], order[-k:]),
        (f"top_{k} = sorted(totals.head({k}).index.tolist())", ["totals"], sorted(ans)),
    ]
    return text, hint, alt, "MEDIUM", steps, ans, final_variants(steps, wrong)


def _t_median_dict(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    cat = rng.choice(ds.of_kind("cat"))
    num, num2 = rng.sample(ds.of_kind("float", "int"), 2)
    text = (
        f"For each {cat.name}, what is the median {num.name} of {ds.entity} whose {num2.name} "
        f"is above the overall mean {num2.name}? Return a dict of {cat.name} to median, "
        "rounded to 2 decimals."
    )
    hint = f"Compute df['{num2.name}'].mean() first, filter, then groupby('{cat.name}').median()."
    alt = f"The threshold is the mean of {num2.name} over all rows, not per {cat.name}."
    threshold = fuzz(typical(num2, r), r, 0.01)
    rows = r.randint(ds.rows // 4, ds.rows * 3 // 5)
    code = f"above = df[df['{num2.name}'] > threshold]"
    frame, full = frame_value(ds, r, rows, code, complete=[num2.name])
    medians = distinct_values(num, r, len(cat.levels))
    ans = dict(zip(cat.levels, medians, strict=True))
    steps = [
        make_step(
            f"threshold = df['{num2.name}'].mean()",
            "threshold",
            f"Mean {num2.name}",
            ["df"],
            threshold,
            f"First the overall mean {num2.name}.",
        ),
        make_step(
            code,
            "above",
            f"Rows with {num2.name} above its mean",
            ["df", "threshold"],
            frame,
            "Keep the rows above it.",
            full=full,
            show="print(above.shape)",
            out=f"({rows}, {len(ds.columns)})",
        ),
        grouped_value(
            f"medians = above.groupby('{cat.name}')['{num.name}'].median().round(2)",
            "medians",
            cat,
            num,
            medians,
            f"Median {num.name} per {cat.name}",
            f"Median {num.name} per {cat.name}, rounded.",
            source="above",
        ),
        make_step(
            "result = medians.to_dict()",
            "result",
            "Answer as a dict",
            ["medians"],
            ans,
            "Convert to a plain dict for submission.",
        ),
    ]
    unfiltered = {k: round(v + fuzz(0, r, max(1.0, abs(v) * 0.2)), 2) for k, v in ans.items()}
    means = {k: round(v + fuzz(0, r, max(1.0, abs(v) * 0.1)), 2) for k, v in ans.items()}
    wrong = [
        (
            f"result = df.groupby('{cat.name}')['{num.name}'].median().round(2).to_dict()",
            ["df"],
            unfiltered,
        ),
        (
            f"result = above.groupby('{cat.name}')['{num.name}'].mean().round(2).to_dict()",
            ["above"],
            means,
        ),
    ]
    return text, hint, alt, "HARD", steps, ans, final_variants(steps, wrong)


def _t_correlation(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    num, num2 = rng.sample(ds.of_kind("float", "int"), 2)
    text = (
        f"What is the Pearson correlation between {num.name} and {num2.name}, "
        "rounded to 3 decimals?"
    )
    hint = "Drop rows missing either column, then Series.corr() (Pearson is the default)."
    alt = "Use the default method of Series.corr and round(x, 3)."
    rows = ds.rows - r.randint(0, ds.rows // 10)
    code = f"pair = df[['{num.name}', '{num2.name}']].dropna()"
    frame, full = frame_value(
        ds, r, rows, code, columns=[num, num2], complete=[num.name, num2.name]
    )
    ans = round(r.uniform(-0.8, 0.9), 3) or 0.123
    steps = [
        make_step(
            code,
            "pair",
            "Complete pairs",
            ["df"],
            frame,
            "Keep complete pairs only.",
            full=full,
            show="print(len(pair))",
            out=str(rows),
        ),
        make_step(
            f"corr = round(pair['{num.name}'].corr(pair['{num2.name}']), 3)",
            "corr",
            "Pearson r",
            ["pair"],
            ans,
            "Pearson correlation, rounded to 3 places.",
        ),
    ]
    spearman = round(ans + fuzz(0, r, 0.1), 3)
    wrong = [
        (
            f"corr = round(pair['{num.name}'].corr(pair['{num2.name}'], method='spearman'), 3)",
            ["pair"],
            spearman,
        ),
        (f"corr = pair['{num.name}'].corr(pair['{num2.name}'])", ["pair"], fuzz(ans, r, 0.001)),
    ]
    return text, hint, alt, "HARD", steps, ans, final_variants(steps, wrong)


def _t_quartile_share(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    num, cat = rng.choice(ds.of_kind("float", "int")), rng.choice(ds.of_kind("cat"))
    val = rng.choice(cat.levels)
    text = (
        f"Among {ds.entity} in the top quartile of {num.name}, what percentage have "
        f"{cat.name} equal to '{val}'? Drop rows with a missing {num.name} first and round "
        "to 1 decimal."
    )
    hint = "Top quartile means >= the 0.75 quantile of the cleaned column; report a percent."
    alt = f"Use quantile(0.75) after dropna(subset=['{num.name}']), then multiply by 100."
    clean_rows = ds.rows - (r.randint(1, ds.rows // 8) if num.missing else 0)
    top_rows = clean_rows // 4 + r.randint(0, 3)
    hits = r.randint(1, top_rows - 1)
    share = hits / top_rows
    ans = round(share * 100, 1)
    q3 = round(num.low + r.uniform(0.6, 0.85) * (num.high - num.low), 2)
    c1 = f"clean = df.dropna(subset=['{num.name}'])"
    c3 = f"top = clean[clean['{num.name}'] >= q3]"
    f1, full1 = frame_value(ds, r, clean_rows, c1, complete=[num.name])
    f3, full3 = frame_value(ds, r, top_rows, c3, complete=[num.name])
    steps = [
        make_step(
            c1,
            "clean",
            f"Rows with {num.name} present",
            ["df"],
            f1,
            f"Drop the rows where {num.name} is missing.",
            full=full1,
            show="print(clean.shape)",
            out=f"({clean_rows}, {len(ds.columns)})",
        ),
        make_step(
            f"q3 = clean['{num.name}'].quantile(0.75)",
            "q3",
            "75th percentile",
            ["clean"],
            q3,
            "Find the 75th percentile.",
        ),
        make_step(
            c3,
            "top",
            "Top quartile rows",
            ["clean", "q3"],
            f3,
            "Keep the top quartile.",
            full=full3,
            show="print(len(top))",
            out=str(top_rows),
        ),
        make_step(
            f"share = (top['{cat.name}'] == '{val}').mean()",
            "share",
            f"Fraction with {cat.name} == {val!r}",
            ["top"],
            share,
            f"Fraction of those with {cat.name} '{val}'.",
        ),
        make_step(
            "pct = round(share * 100, 1)",
            "pct",
            "Percentage",
            ["share"],
            ans,
            "As a percentage with one decimal.",
        ),
    ]
    if not num.missing:  # dropna changed nothing: the same frame, so the same hash
        loaded = load_step(ds)
        steps[0] = replace(steps[0], value=loaded.value, full=loaded.full)
    other = round(ans + r.choice((-1, 1)) * r.randint(1, 20) / 10, 1)
    wrong = [
        ("pct = round(share, 1)", ["share"], round(share, 1)),
        (
            f"pct = round((df[df['{num.name}'] > q3]['{cat.name}'] == '{val}').mean() * 100, 1)",
            ["df", "q3"],
            other,
        ),
    ]
    return text, hint, alt, "VERY_HARD", steps, ans, final_variants(steps, wrong)


def _t_mode_code(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    code_col, cat = rng.choice(ds.of_kind("code")), rng.choice(ds.of_kind("cat"))
    val = rng.choice(cat.levels)
    text = f"What is the most common {code_col.name} among {ds.entity} with {cat.name} '{val}'?"
    hint = f"Filter on {cat.name}, then take mode()[0] of '{code_col.name}' as an int."
    alt = f"{code_col.name} is numeric: submit the number, not a string."
    sub = f"{slug(cat.name)}_{slug(val)}"
    rows = r.randint(ds.rows // 8, ds.rows * 2 // 3)
    code = f"{sub} = df[df['{cat.name}'] == '{val}']"
    frame, full = frame_value(ds, r, rows, code, fixed={cat.name: val})
    levels = list(range(int(code_col.low), int(code_col.high) + 1))
    ans = r.choice(levels)
    steps = [
        make_step(
            code,
            sub,
            f"{ds.entity} with {cat.name} == {val!r}",
            ["df"],
            frame,
            f"Restrict to {cat.name} '{val}'.",
            full=full,
            show=f"print({sub}.shape)",
            out=f"({rows}, {len(ds.columns)})",
        ),
        make_step(
            f"most_common = int({sub}['{code_col.name}'].mode()[0])",
            "most_common",
            f"Modal {code_col.name}",
            [sub],
            ans,
            f"The mode of {code_col.name}.",
        ),
    ]
    wrong = [
        (f"most_common = str({sub}['{code_col.name}'].mode()[0])", [sub], str(ans)),
        (f"most_common = int(df['{code_col.name}'].mode()[0])", ["df"], other_than(r, levels, ans)),
    ]
    return text, hint, alt, "MEDIUM", steps, ans, final_variants(steps, wrong)


def _t_compare(ds: Dataset, rng: random.Random, r: random.Random) -> Built:
    cat, num = rng.choice(ds.of_kind("cat")), rng.choice(ds.of_kind("float", "int"))
    a, b = rng.sample(cat.levels, 2)
    text = (
        f"Is the average {num.name} of {ds.entity} with {cat.name} '{a}' higher than for "
        f"those with {cat.name} '{b}'?"
    )
    hint = f"Compare df.groupby('{cat.name}')['{num.name}'].mean() at '{a}' and '{b}'."
    alt = "Answer with a boolean."
    means = distinct_values(num, r, len(cat.levels))
    ans = bool(means[cat.levels.index(a)] > means[cat.levels.index(b)])
    steps = [
        grouped_value(
            f"means = df.groupby('{cat.name}')['{num.name}'].mean()",
            "means",
            cat,
            num,
            means,
            f"Mean {num.name} per {cat.name}",
            f"Mean {num.name} per {cat.name}.",
        ),
        make_step(
            f"higher = bool(means['{a}'] > means['{b}'])",
            "higher",
            f"{a} above {b}",
            ["means"],
            ans,
            "Compare the two groups.",
        ),
    ]
    wrong = [
        (f"higher = bool(means['{a}'] < means['{b}'])", ["means"], not ans),
        (
            f"higher = 'Yes' if means['{a}'] > means['{b}'] else 'No'",
            ["means"],
            "Yes" if ans else "No",
        ),
    ]
    return text, hint, alt, "EASY", steps, ans, final_variants(steps, wrong)


Template = Callable[[Dataset, random.Random, random.Random], Built]


# Weights: easy questions are the bulk of a question bank, very hard ones are rare.
_TEMPLATES: tuple[tuple[Template, int], ...] = (
    (_t_mean_filtered, 3),
    (_t_count_above, 3),
    (_t_best_group, 2),
    (_t_top_k, 2),
    (_t_median_dict, 1),
    (_t_correlation, 1),
    (_t_quartile_share, 1),
    (_t_mode_code, 2),
    (_t_compare, 2),
)


def usable_templates(ds: Dataset) -> list[tuple[Template, int]]:
    """The templates (with their weights) that can ask about ``ds``."""
    return [(t, w) for t, w in _TEMPLATES if t is not _t_mode_code or ds.of_kind("code")]
