"""The numbers of a report: the funnel from input lines to training rows, the distributions of
the tables, and the split-leakage proof. Counts come from the manifest where it has them and
from the Parquet files otherwise; nothing is estimated."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from builder.report.folder import BuildFolder
from schemas.vocabulary import BRIDGES_SPLITS, HOOK_ONLY


@dataclass(frozen=True)
class Step:
    """One bar of the funnel: ``key`` names it in the page's data attributes."""

    key: str
    label: str
    count: int


def funnel(manifest: Mapping[str, Any], verified: Mapping[str, int]) -> list[Step]:
    """Input lines → valid → verified → eligible → rows per training config.

    ``verified``: episodes whose flag holds as ``captured``, as ``recomputed``, and ``both``
    (from the ``episodes`` table)."""
    episode_inputs = [i for i in manifest["inputs"] if i.get("kind") == "episodes"]
    lines = sum(int(i.get("lines", 0)) for i in episode_inputs)
    valid = sum(int(i.get("valid", 0)) for i in episode_inputs)
    # a non-blank line of JSONL, an episode of a JSON document (``builder.sources.documents``)
    records = valid + sum(int(i.get("rejected", 0)) for i in episode_inputs)
    # ``failed_hook_checks`` episodes train every config but those that read hooks
    exclusions = manifest["training_exclusions"]
    excluded = sum(int(n) for k, n in exclusions.items() if k not in HOOK_ONLY)
    steps = [
        Step("input_lines", "episode lines read", lines),
        Step("non_blank", "records (non-blank lines)", records),
        Step("valid", "valid episodes", valid),
        Step("verified_captured", "verified as captured", verified.get("captured", 0)),
        Step("verified_recomputed", "verified as recomputed", verified.get("recomputed", 0)),
        Step("verified", "verified, captured and recomputed", verified.get("both", 0)),
        Step("trainable", "episodes that train", valid - excluded),
    ]
    for name, meta in manifest["configs"].items():
        if meta.get("kind") == "objective":
            rows = sum(int(n) for n in meta["rows"].values())
            steps.append(Step(f"rows.{name}", f"{name} rows", rows))
    return steps


def verified_counts(build: BuildFolder) -> dict[str, int]:
    episodes = build.read("episodes", ["verified", "verified_recomputed"])
    if episodes.is_empty():
        return {"captured": 0, "recomputed": 0, "both": 0}
    captured = pl.col("verified").fill_null(False)
    recomputed = pl.col("verified_recomputed").fill_null(False)
    row = episodes.select(
        captured.sum().alias("captured"),
        recomputed.sum().alias("recomputed"),
        (captured & recomputed).sum().alias("both"),
    ).row(0, named=True)
    return {k: int(v) for k, v in row.items()}


def counts(series: pl.Series) -> dict[str, int]:
    """Value → count, nulls as ``(none)``, sorted by value."""
    tally = Counter("(none)" if v is None else str(v) for v in series.to_list())
    return dict(sorted(tally.items()))


def int_counts(series: pl.Series) -> dict[int, int]:
    return dict(sorted(Counter(int(v) for v in series.drop_nulls().to_list()).items()))


def json_type(text: str | None) -> str:
    """The JSON type of a canonical JSON value (Python ``json`` text, NaN tokens allowed)."""
    if text is None:
        return "missing"
    try:
        value = json.loads(text)
    except ValueError:
        return "unparsable"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "NaN/inf"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def distributions(build: BuildFolder) -> dict[str, Any]:
    """The distributions the report charts, each ``{label: count}`` (or rates)."""
    traces = build.read("traces", ["role", "n_turns", "n_hooks", "execution_success"])
    episodes = build.read(
        "episodes", ["n_consistency_traces", "majority_count", "expected_final_answer"]
    )
    questions = build.read("questions", ["difficulty"])
    corrections = build.read("corrections", ["error_type", "attempts_since_error"])
    out: dict[str, Any] = {}
    if not traces.is_empty():
        out["turns_per_trace"] = int_counts(traces["n_turns"])
        out["hooks_per_trace"] = int_counts(traces["n_hooks"])
        success = (
            traces.group_by("role")
            .agg(
                pl.len().alias("traces"),
                pl.col("execution_success").fill_null(False).sum().alias("succeeded"),
            )
            .sort("role")
        )
        out["success_by_role"] = {
            r["role"] or "(none)": (int(r["succeeded"]), int(r["traces"]))
            for r in success.iter_rows(named=True)
        }
    if not episodes.is_empty():
        out["consistency_per_episode"] = int_counts(episodes["n_consistency_traces"])
        agreement = episodes.filter(pl.col("n_consistency_traces") > 0).select(
            (pl.col("majority_count") / pl.col("n_consistency_traces")).alias("share")
        )
        bins = Counter(_agreement_bin(v) for v in agreement["share"].to_list())
        out["majority_agreement"] = {b: bins.get(b, 0) for b in AGREEMENT_BINS}
        types = Counter(json_type(v) for v in episodes["expected_final_answer"].to_list())
        out["answer_types"] = dict(sorted(types.items()))
    if not questions.is_empty():
        out["difficulty"] = counts(questions["difficulty"])
    if not corrections.is_empty():
        out["correction_error_types"] = counts(corrections["error_type"])
        out["correction_attempts"] = int_counts(corrections["attempts_since_error"])
    sessions = build.manifest.get("sessions") or {}
    if sessions.get("actions_by_source"):
        out["actions_by_source"] = dict(sorted(sessions["actions_by_source"].items()))
    return out


AGREEMENT_BINS = ("<50%", "50–75%", "75–99%", "100%")


def _agreement_bin(share: float | None) -> str:
    if share is None or share < 0.5:
        return AGREEMENT_BINS[0]
    if share < 0.75:
        return AGREEMENT_BINS[1]
    if share < 1.0:
        return AGREEMENT_BINS[2]
    return AGREEMENT_BINS[3]


@dataclass(frozen=True)
class Leakage:
    """Questions (by id, across every config that has one) and normalized question texts
    (the ``splits`` config) found in more than one split: both must be 0."""

    configs_checked: list[str]
    questions: int
    shared_ids: int
    shared_texts: int
    examples: list[str]


def leakage(build: BuildFolder) -> Leakage:
    frames, checked = [], []
    for name in build.configs():
        columns = build.columns(name)
        if "question_id" in columns:
            if "in_build" in columns:  # ``splits``: the questions earlier builds carried aside
                rows = build.read(name, ["question_id", "in_build"], split=True)
                frames.append(rows.filter("in_build").drop("in_build").unique())
            else:
                frames.append(build.read(name, ["question_id"], split=True).unique())
            checked.append(name)
    if not frames:
        return Leakage([], 0, 0, 0, [])
    pairs = pl.concat(frames).unique()
    per_question = pairs.group_by("question_id").agg(pl.col("split").n_unique().alias("n"))
    shared = per_question.filter(pl.col("n") > 1).sort("question_id")
    reasons = "reason" in build.columns("splits")  # builds before the column had none
    texts = build.read("splits", ["normalized_text", "split", *(["reason"] if reasons else [])])
    if reasons:  # a bridge's split is nominal: its rows never train
        texts = texts.filter(pl.col("reason").fill_null("") != BRIDGES_SPLITS)
        texts = texts.select("normalized_text", "split")
    shared_texts = 0
    if not texts.is_empty():
        per_text = texts.unique().group_by("normalized_text").agg(pl.col("split").n_unique())
        shared_texts = per_text.filter(pl.col("split") > 1).height
    return Leakage(
        checked,
        per_question.height,
        shared.height,
        shared_texts,
        shared["question_id"].head(5).to_list(),
    )


@dataclass(frozen=True)
class CheckExample:
    where: str
    row_id: str  # the episode's id, or the question's
    kinds: list[str]


def check_examples(build: BuildFolder, per_kind: int = 3) -> dict[str, list[CheckExample]]:
    """A few rows (file:line, id) of each failed integrity check kind: episodes, then
    questions (a question check is named ``kind (questions)`` when the kind is both)."""
    out: dict[str, list[CheckExample]] = {}
    for table, key in (("episodes", "episode_id"), ("questions", "question_id")):
        rows = build.read(table, [key, "source_file", "source_line", "checks"])
        if rows.is_empty():
            continue
        for row in rows.filter(pl.col("checks").list.len() > 0).iter_rows(named=True):
            example = CheckExample(
                f"{row['source_file']}:{row['source_line']}", str(row[key]), row["checks"]
            )
            for kind in row["checks"]:
                kept = out.setdefault(kind if table == "episodes" else f"{kind} (questions)", [])
                if len(kept) < per_kind:
                    kept.append(example)
    return dict(sorted(out.items()))
